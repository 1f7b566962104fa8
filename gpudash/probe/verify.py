"""The verify task's JSON result -> dataclasses (pure, total, size-capped).

The result is written on the host by `gpudash/tasks/verify/program.py` and read back as
untrusted text: a host (or anyone who can write that file) decides its contents. So the
parser never raises, reads at most `MAX_BYTES`, keeps at most a bounded number of GPUs,
engines and lines, accepts a number only when it is a finite non-negative JSON number (not a
bool, not a string), and cleans every string of control characters. What it could not read is
said in `notes`, and a result it could not read at all has status "unknown", never "ok".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from gpudash.text import clean_line

MAX_BYTES = 1 << 20
MAX_GPUS = 64
MAX_ITEMS = 32
MAX_TEXT = 300
STATUSES = ("ok", "fail", "refused")


@dataclass(frozen=True)
class VerifyTorch:
    import_ok: bool | None = None
    version: str | None = None
    cuda: str | None = None
    available: bool | None = None
    device_count: int | None = None
    arch_list: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class VerifyGpu:
    index: int
    name: str | None = None
    cc: str | None = None
    uuid: str | None = None
    bus_id: str | None = None
    arch: str | None = None  # "sass", "compatible", "ptx" or "missing"
    arch_via: str | None = None
    matmul_tflops: float | None = None
    matmul_ok: bool | None = None
    matmul_rel_err: float | None = None
    copy_gbps: float | None = None
    h2d_gbps: float | None = None
    d2h_gbps: float | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    error: str | None = None

    @property
    def measured(self) -> bool:
        return self.matmul_tflops is not None or self.copy_gbps is not None


@dataclass(frozen=True)
class VerifyNccl:
    world: int | None = None
    bytes: int | None = None
    iters: int | None = None
    busbw_gbps: float | None = None
    algbw_gbps: float | None = None
    time_ms: float | None = None
    ok: bool | None = None
    error: str | None = None
    nccl_version: str | None = None


@dataclass(frozen=True)
class VerifyEngine:
    name: str
    version: str | None = None
    import_ok: bool | None = None
    op: str | None = None
    op_ok: bool | None = None
    error: str | None = None
    seconds: float | None = None

    @property
    def ok(self) -> bool:
        return bool(self.import_ok) and self.op_ok is not False and self.error is None


@dataclass(frozen=True)
class VerifyResult:
    status: str  # "ok", "fail", "refused" or "unknown" (unreadable)
    started: float | None = None  # Unix time (the file's ISO time, UTC when it names no zone)
    finished: float | None = None
    duration_s: float | None = None
    torch_import_s: float | None = None
    after_import_s: float | None = None
    host: str | None = None
    python: str | None = None
    executable: str | None = None
    driver: str | None = None
    expect_gpus: int | None = None
    force: bool = False  # measured although other processes held GPU memory
    torch: VerifyTorch = field(default_factory=VerifyTorch)
    gpus: tuple[VerifyGpu, ...] = ()
    peer: tuple[tuple[bool | None, ...], ...] = ()
    nccl: VerifyNccl | None = None
    engines: tuple[VerifyEngine, ...] = ()
    failures: tuple[str, ...] = ()
    refused: str | None = None
    notes: tuple[str, ...] = ()

    def age_s(self, now: float) -> float | None:
        """Seconds since the run finished, at Unix time `now` (None when its time is unknown)."""
        when = self.finished if self.finished is not None else self.started
        return None if when is None else max(0.0, now - when)


def parse_verify(text: str | bytes) -> VerifyResult:
    """The result file's text -> VerifyResult; never raises."""
    try:
        return _parse(text)
    except Exception as exc:  # a bug here must not take the caller down: say so instead
        return VerifyResult("unknown", notes=(f"unreadable result ({type(exc).__name__})",))


def _parse(text: str | bytes) -> VerifyResult:
    if isinstance(text, bytes):
        text = text[: MAX_BYTES + 1].decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return VerifyResult("unknown", notes=("no result text",))
    if len(text) > MAX_BYTES:
        return VerifyResult("unknown", notes=(f"result larger than {MAX_BYTES} bytes: not read",))
    if not text.strip():
        return VerifyResult("unknown", notes=("empty result",))
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return VerifyResult("unknown", notes=("result is not JSON",))
    if not isinstance(doc, dict):
        return VerifyResult("unknown", notes=("result is not a JSON object",))
    notes: list[str] = []
    status = _text(doc.get("status"))
    if status not in STATUSES:
        notes.append(f"unknown status {status!r}" if status else "no status")
        status = "unknown"
    gpus_raw = _list(doc.get("gpus"))
    if len(gpus_raw) > MAX_GPUS:
        notes.append(f"{len(gpus_raw)} GPUs listed: only the first {MAX_GPUS} read")
    gpus = tuple(g for g in (_gpu(x) for x in gpus_raw[:MAX_GPUS]) if g is not None)
    if len(gpus) < min(len(gpus_raw), MAX_GPUS):
        notes.append("some GPU entries could not be read")
    nccl_raw = doc.get("nccl")
    return VerifyResult(
        status=status,
        started=_time(doc.get("started")),
        finished=_time(doc.get("finished")),
        duration_s=_num(doc.get("duration_s")),
        torch_import_s=_num(doc.get("torch_import_s")),
        after_import_s=_num(doc.get("after_import_s")),
        host=_text(doc.get("host")),
        python=_text(doc.get("python")),
        executable=_text(doc.get("executable")),
        driver=_text(doc.get("driver")),
        expect_gpus=_int(doc.get("expect_gpus")),
        force=doc.get("force") is True,
        torch=_torch(doc.get("torch")),
        gpus=gpus,
        peer=_peer(doc.get("peer")),
        nccl=_nccl(nccl_raw) if isinstance(nccl_raw, dict) else None,
        engines=tuple(e for e in (_engine(x) for x in _list(doc.get("engines"))[:MAX_ITEMS]) if e),
        failures=tuple(t for t in (_text(x) for x in _list(doc.get("failures"))[:MAX_ITEMS]) if t),
        refused=_text(doc.get("refused")),
        notes=tuple(notes),
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return clean_line(value[: MAX_TEXT * 2]).strip()[:MAX_TEXT] or None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 53:
        return None
    return value


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _time(value: Any) -> float | None:
    text = _text(value)
    if text is None or len(text) > 40:
        return None
    try:
        when = datetime.fromisoformat(text)
        return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def _torch(raw: Any) -> VerifyTorch:
    if not isinstance(raw, dict):
        return VerifyTorch()
    arch = tuple(a for a in (_text(x) for x in _list(raw.get("arch_list"))[:MAX_ITEMS]) if a)
    return VerifyTorch(
        import_ok=_bool(raw.get("import_ok")),
        version=_text(raw.get("version")),
        cuda=_text(raw.get("cuda")),
        available=_bool(raw.get("available")),
        device_count=_int(raw.get("device_count")),
        arch_list=arch,
        error=_text(raw.get("error")),
    )


def _gpu(raw: Any) -> VerifyGpu | None:
    if not isinstance(raw, dict):
        return None
    index = _int(raw.get("index"))
    if index is None:
        return None
    arch = _text(raw.get("arch"))
    return VerifyGpu(
        index=index,
        name=_text(raw.get("name")),
        cc=_text(raw.get("cc")),
        uuid=_text(raw.get("uuid")),
        bus_id=_text(raw.get("bus_id")),
        arch=arch if arch in ("sass", "compatible", "ptx", "missing") else None,
        arch_via=_text(raw.get("arch_via")),
        matmul_tflops=_num(raw.get("matmul_tflops")),
        matmul_ok=_bool(raw.get("matmul_ok")),
        matmul_rel_err=_num(raw.get("matmul_rel_err")),
        copy_gbps=_num(raw.get("copy_gbps")),
        h2d_gbps=_num(raw.get("h2d_gbps")),
        d2h_gbps=_num(raw.get("d2h_gbps")),
        pcie_gen_max=_int(raw.get("pcie_gen_max")),
        pcie_width_max=_int(raw.get("pcie_width_max")),
        pcie_gen=_int(raw.get("pcie_gen")),
        pcie_width=_int(raw.get("pcie_width")),
        error=_text(raw.get("error")),
    )


def _peer(raw: Any) -> tuple[tuple[bool | None, ...], ...]:
    rows = _list(raw)[:MAX_GPUS]
    return tuple(tuple(_bool(c) for c in _list(row)[:MAX_GPUS]) for row in rows)


def _nccl(raw: Mapping[str, Any]) -> VerifyNccl:
    return VerifyNccl(
        world=_int(raw.get("world")),
        bytes=_int(raw.get("bytes")),
        iters=_int(raw.get("iters")),
        busbw_gbps=_num(raw.get("busbw_gbps")),
        algbw_gbps=_num(raw.get("algbw_gbps")),
        time_ms=_num(raw.get("time_ms")),
        ok=_bool(raw.get("ok")),
        error=_text(raw.get("error")),
        nccl_version=_text(raw.get("nccl_version")),
    )


def _engine(raw: Any) -> VerifyEngine | None:
    if not isinstance(raw, dict):
        return None
    name = _text(raw.get("name"))
    if name is None:
        return None
    return VerifyEngine(
        name=name,
        version=_text(raw.get("version")),
        import_ok=_bool(raw.get("import_ok")),
        op=_text(raw.get("op")),
        op_ok=_bool(raw.get("op_ok")),
        error=_text(raw.get("error")),
        seconds=_num(raw.get("seconds")),
    )
