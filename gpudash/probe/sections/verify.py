"""The verify section: the last result the verify task left on the host, and the host's clock.

Reading a file costs the probe nothing: the kernels ran earlier, in the verify task (key V),
which writes its JSON at `RESULT` (under the login's $HOME) as well as in its job dir. The
host's own clock comes along so that the result's age is measured in one clock, whatever the
skew between the host and this machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudash.probe.markdown import md, md_table
from gpudash.probe.parts import Part
from gpudash.probe.verify import MAX_BYTES, VerifyResult, parse_verify
from gpudash.text import is_uint

NAME = "verify"
TIMEOUT = 5.0
RESULT = ".cache/gpudash/verify/last.json"
"""Where the verify task leaves its last result, relative to the login's $HOME."""

BODY = rf"""
gd_vf="$HOME/{RESULT}"
gd_verify() {{
  [ -f "$gd_vf" ] || {{ echo "no verify result at $gd_vf"; return 3; }}
  head -c {MAX_BYTES + 1} "$gd_vf"
}}
part result gd_verify
part clock date +%s
"""


@dataclass(frozen=True)
class VerifySection:
    """`result` None when verify never ran here (or its file is gone); `looked` False when
    the probe did not look for it at all (a capture older than this section)."""

    result: VerifyResult | None
    host_now: float | None = None  # the host's clock (Unix time) when it was probed
    notes: tuple[str, ...] = ()
    looked: bool = True

    def age_s(self) -> float | None:
        if self.result is None or self.host_now is None:
            return None
        return self.result.age_s(self.host_now)


def parse(parts: Mapping[str, Part]) -> VerifySection:
    clock = parts.get("clock")
    text = clock.text.strip() if clock is not None and clock.ok else ""
    host_now = float(text) if is_uint(text) and len(text) <= 12 else None
    part = parts.get("result")
    if part is None:
        return VerifySection(None, host_now, ("no result part",), looked=False)
    if part.rc == 3:
        return VerifySection(None, host_now)
    if not part.ok:
        return VerifySection(parse_verify(""), host_now, (f"reading the result: rc {part.rc}",))
    return VerifySection(parse_verify(part.text), host_now)


def summary(data: VerifySection) -> str:
    r = data.result
    if not data.looked:
        return "not looked for"
    if r is None:
        return "not run (`gpudash run verify HOST` runs it; b then V in the dashboard)"
    age = data.age_s()
    when = "" if age is None else f", {age_text(age)} ago"
    if r.status in ("unknown", "refused"):
        return f"{r.status}{when}"
    measured = [g for g in r.gpus if g.matmul_tflops is not None]
    if not measured:
        return f"{r.status}{when}: nothing measured"
    low = min(g.matmul_tflops or 0 for g in measured)
    high = max(g.matmul_tflops or 0 for g in measured)
    speed = f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"
    line = f"{r.status}{when}: {len(measured)} GPU(s) {speed} TFLOP/s bf16"
    if r.nccl and r.nccl.busbw_gbps is not None and (r.nccl.world or 0) >= 2:
        line += f", busbw {r.nccl.busbw_gbps:.0f} GB/s"
    return line


def age_text(seconds: float) -> str:
    """`3 h`, `12 min`, `40 s`: an age as a panel or a summary line shows it."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "Verify"


def report(v: VerifySection) -> list[str]:
    """What the verify task measured on the GPUs (proven, not inferred), with its age."""
    r = v.result
    if not v.looked:
        return ["Not looked for by this probe."]
    if r is None:
        return [
            "Not run on this host (`gpudash run verify HOST` runs it; b then V in the dashboard)."
        ]
    age = v.age_s()
    when = f", {age_text(age)} ago" if age is not None else ""
    lines = [
        f"Status **{r.status}**{when}; torch {md(r.torch.version or '?')} "
        f"(CUDA {md(r.torch.cuda or '?')}), driver {md(r.driver or '?')}, "
        f"python `{md(r.executable or '?')}`.",
        "",
    ]
    if r.refused:
        lines += [f"Refused: {md(r.refused)}", ""]
    if r.gpus:
        rows = [
            (
                g.index,
                md(g.name or "?"),
                md(g.arch or "?"),
                _rate(g.matmul_tflops),
                _rate(g.copy_gbps),
                f"{_rate(g.h2d_gbps, 1)} / {_rate(g.d2h_gbps, 1)}",
                md(g.error or ("wrong results" if g.matmul_ok is False else "ok")),
            )
            for g in r.gpus
        ]
        header = ("GPU", "name", "arch", "bf16 TFLOP/s", "copy GB/s", "H2D / D2H GB/s", "status")
        lines += md_table(header, rows)
    n = r.nccl
    if n is not None and (n.world or 0) >= 2:
        what = md(n.error) if n.error else f"busbw {_rate(n.busbw_gbps)} GB/s"
        lines += ["", f"All-reduce over {n.world} GPUs ({(n.bytes or 0) >> 20} MiB bf16): {what}."]
    for e in r.engines:
        state = "ok" if e.ok else f"failed: {md(e.error or '?')}"
        lines.append(f"- {md(e.name)} {md(e.version or '')}: {state}")
    lines += [f"- {md(f)}" for f in r.failures]
    return lines


def _rate(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
