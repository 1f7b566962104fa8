"""A serve state file (`$HOME/.cache/gpudash/serve/TASK.json`) -> dataclasses (pure, total).

The file is written on the host by the serve supervisor (schema 1, see the serve contract in
the issue) and read back as untrusted text: whoever can write it decides what it says. So the
parser never raises, reads at most `MAX_BYTES`, keeps a bounded number of phases and command
words, accepts a number only when it is a finite non-negative JSON number (not a bool, not a
string), and cleans every string of control characters. A state it cannot read is "unknown",
never "ready". What the file says is not taken on trust for liveness either: the section
checks the pid and the port on the host itself (`alive`, `listening`), and `verdict` is what
both say together: a "ready" whose engine is gone is "exited".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from gpudash.serve.phases import PHASES
from gpudash.text import clean_line

MAX_BYTES = 256 << 10
MAX_PHASES = 16
MAX_WORDS = 64
MAX_TEXT = 300
MAX_LINE = 600  # the failure's quoted log line: the one place a longer text is worth keeping
STATES = ("starting", "ready", "failed", "stalled", "stopped")
ENGINES = ("sglang", "vllm", "transformers")


@dataclass(frozen=True)
class ServeFailure:
    """The root cause the supervisor's classifier named, with the log line it was judged
    from (cleaned; quoted as is)."""

    code: str
    line: str | None = None
    lineno: int | None = None
    why: str | None = None
    fix: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class ServeReady:
    """The figures measured at the moment of readiness."""

    time_to_ready_s: float | None = None
    ttft_ms: float | None = None
    decode_tok_s: float | None = None
    attention_backend: str | None = None
    flashinfer_jit: bool | None = None
    phases_s: tuple[tuple[str, float], ...] = ()  # each phase's duration, in order


@dataclass(frozen=True)
class ServeState:
    """One state file, and what the host said of its pid and port when probed.

    `alive` / `listening` are None where the probe could not tell (no pid or port in the
    file, no /proc/net/tcp and no `ss`)."""

    file: str  # the file's name without .json: the task's name
    state: str  # one of STATES, or "unknown" (unreadable, unknown word)
    task: str | None = None
    engine: str | None = None
    model: str | None = None
    name: str | None = None
    port: int | None = None
    tp: int | None = None
    pid: int | None = None
    pgid: int | None = None
    started: float | None = None
    updated: float | None = None
    phase: str | None = None
    phases: tuple[tuple[str, float], ...] = ()  # elapsed s at each phase's entry, in order
    ready: ServeReady | None = None
    failure: ServeFailure | None = None
    command: tuple[str, ...] = ()
    log: str | None = None
    alive: bool | None = None
    listening: bool | None = None
    members: tuple[int, ...] = ()
    """The pids of the engine's process group on the host when probed (its GPU workers)."""
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        """The state as the host bears it out: "exited" where the file says ready,
        starting or stalled but its engine's pid is gone; else the file's word."""
        if self.state in ("ready", "starting", "stalled") and self.alive is False:
            return "exited"
        return self.state

    def phase_entered(self) -> float | None:
        """The Unix time the current phase began (started + its entry), where known."""
        entry = dict(self.phases).get(self.phase or "")
        if self.started is None or entry is None:
            return None
        return self.started + entry


def parse_state(file: str, text: str | bytes) -> ServeState:
    """The state file's text -> ServeState; never raises."""
    name = clean_line(file)[:100] or "?"
    try:
        return _parse(name, text)
    except Exception as exc:  # a bug here must not take the caller down: say so instead
        return ServeState(name, "unknown", notes=(f"unreadable state ({type(exc).__name__})",))


def _parse(file: str, text: str | bytes) -> ServeState:
    if isinstance(text, bytes):
        text = text[: MAX_BYTES + 1].decode("utf-8", errors="replace")
    if not isinstance(text, str) or not text.strip():
        return ServeState(file, "unknown", notes=("empty state file",))
    if len(text) > MAX_BYTES:
        return ServeState(
            file, "unknown", notes=(f"state larger than {MAX_BYTES} bytes: not read",)
        )
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return ServeState(file, "unknown", notes=("state is not JSON",))
    if not isinstance(doc, dict):
        return ServeState(file, "unknown", notes=("state is not a JSON object",))
    notes: list[str] = []
    if doc.get("schema") != 1:
        notes.append("no schema 1 in it: read as schema 1")
    raw_state = doc.get("state")
    state = raw_state if isinstance(raw_state, str) and raw_state in STATES else "unknown"
    if state == "unknown":
        said = _text(raw_state)
        notes.append(f"unknown state {said!r}" if said else "no state")
    engine = _text(doc.get("engine"))
    failure = doc.get("failure")
    ready = doc.get("ready")
    return ServeState(
        file=file,
        state=state,
        task=_text(doc.get("task")),
        engine=engine,
        model=_text(doc.get("model")),
        name=_text(doc.get("name")),
        port=_port(doc.get("port")),
        tp=_int(doc.get("tp")),
        pid=_pid(doc.get("pid")),
        pgid=_pid(doc.get("pgid")),
        started=_num(doc.get("started")),
        updated=_num(doc.get("updated")),
        phase=_text(doc.get("phase")),
        phases=_phases(doc.get("phases")),
        ready=_ready(ready) if isinstance(ready, dict) else None,
        failure=_failure(failure) if isinstance(failure, dict) else None,
        command=tuple(w for w in (_text(x) for x in _list(doc.get("command"))[:MAX_WORDS]) if w),
        log=_text(doc.get("log")),
        notes=tuple(notes),
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any, limit: int = MAX_TEXT) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return clean_line(value[: limit * 2]).strip()[:limit] or None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 53:
        return None
    return value


def _pid(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and 1 < number < 1 << 22 else None


def _port(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and 0 < number < 65536 else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _phases(raw: Any) -> tuple[tuple[str, float], ...]:
    if not isinstance(raw, dict):
        return ()
    out: list[tuple[str, float]] = []
    for key, value in list(raw.items())[:MAX_PHASES]:
        name, seconds = _text(key, 40), _num(value)
        if name is not None and seconds is not None:
            out.append((name, seconds))
    # in the engine's own order (the supervisor writes its keys sorted by name)
    order = {name: i for i, name in enumerate(PHASES)}
    return tuple(sorted(out, key=lambda p: order.get(p[0], len(order))))


def _ready(raw: dict[str, Any]) -> ServeReady:
    return ServeReady(
        time_to_ready_s=_num(raw.get("time_to_ready_s")),
        ttft_ms=_num(raw.get("ttft_ms")),
        decode_tok_s=_num(raw.get("decode_tok_s")),
        attention_backend=_text(raw.get("attention_backend"), 60),
        flashinfer_jit=_bool(raw.get("flashinfer_jit")),
        phases_s=_phases(raw.get("phases_s")),
    )


def _failure(raw: dict[str, Any]) -> ServeFailure | None:
    code = _text(raw.get("code"), 60)
    if code is None:
        return None
    return ServeFailure(
        code=code,
        line=_text(raw.get("line"), MAX_LINE),
        lineno=_int(raw.get("lineno")),
        why=_text(raw.get("why")),
        fix=_text(raw.get("fix")),
        source=_text(raw.get("source")),
    )
