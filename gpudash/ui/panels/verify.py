"""The Verify panel: what the verify task proved on the GPUs, and how long ago.

Per GPU: bf16 matmul TFLOP/s, memory copy GB/s, pinned H2D/D2H GB/s and a status; then the
all-reduce line, the engines' imports, and the run's age. Everything in it was measured by
the program on the host (gpudash/tasks/verify/program.py), never inferred.
"""

from __future__ import annotations

from statistics import median

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.checks.verify import SLOW_WARN
from gpudash.probe.sections.verify import VerifySection, age_text
from gpudash.probe.verify import VerifyGpu, VerifyResult
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import dim, remote
from gpudash.ui.widgets.grid import Column, Grid

_ARCH = {"sass": "", "compatible": "compat", "ptx": "PTX only", "missing": "no kernels"}


def _slower(g: VerifyGpu, gpus: tuple[VerifyGpu, ...]) -> float | None:
    """How far below the median of its same-model peers this GPU's matmul is (checks'
    rule, gpudash.checks.verify), or None when it is not past the warning line."""
    others = [
        o.matmul_tflops
        for o in gpus
        if o.index != g.index and o.name == g.name and o.matmul_tflops is not None
    ]
    if g.matmul_tflops is None or not others or median(others) <= 0:
        return None
    short = 1 - g.matmul_tflops / median(others)
    return short if short > SLOW_WARN else None


def _status(g: VerifyGpu, gpus: tuple[VerifyGpu, ...]) -> Text:
    if g.error:
        return Text.assemble(Text("error: ", style="bold red"), remote(g.error, style="red"))
    if g.arch == "missing":
        return Text("no kernels for this arch", style="bold red")
    if g.matmul_ok is False:
        return Text("wrong results", style="bold red")
    if g.matmul_tflops is None:
        return dim("not measured")
    short = _slower(g, gpus)
    if short is not None:
        return Text(f"slow: -{short:.0%} vs peers", style="bold yellow")
    if g.arch == "ptx":
        return Text("ok (PTX JIT)", style="yellow")
    return Text("ok", style="green")


def _n(value: float | None, digits: int = 0) -> Text:
    return dim("-") if value is None else Text(f"{value:.{digits}f}")


def _gpus(r: VerifyResult) -> Grid:
    table = Grid(
        Column("GPU", justify="right"),
        Column("name", give="ellipsis", min_width=6),
        Column("TFLOP/s", justify="right"),
        Column("copy GB/s", justify="right"),
        Column("H2D/D2H", justify="right"),
        Column("status", give="ellipsis", min_width=6),
    )
    for g in r.gpus:
        host = Text.assemble(_n(g.h2d_gbps, 1), "/", _n(g.d2h_gbps, 1))
        name = remote(g.name or "?")
        if g.arch and _ARCH.get(g.arch):
            name.append(f" ({_ARCH[g.arch]})", style="dim")
        table.add_row(
            Text(str(g.index)),
            name,
            _n(g.matmul_tflops),
            _n(g.copy_gbps),
            host,
            _status(g, r.gpus),
        )
    return table


def _nccl(r: VerifyResult) -> Text | None:
    n = r.nccl
    if n is None or (n.world or 0) < 2:
        if len(r.gpus) >= 2:
            return dim("all-reduce: not run")
        return None
    head = Text(f"all-reduce over {n.world} GPUs: ", style="dim")
    if n.error or n.ok is False:
        return Text.assemble(head, remote(n.error or "wrong sum", style="bold red"))
    line = Text.assemble(head, Text(f"busbw {n.busbw_gbps or 0:.0f} GB/s", style="bold"))
    if n.time_ms is not None:
        line.append(f" ({n.time_ms:.2f} ms per {(n.bytes or 0) >> 20} MiB)", style="dim")
    if n.nccl_version:
        line.append(f" NCCL {n.nccl_version}", style="dim")
    return line


def _engines(r: VerifyResult) -> Text:
    if not r.engines:
        return dim("engines: none installed (FlashInfer, sgl-kernel, vLLM)")
    line = Text("engines: ", style="dim")
    for i, e in enumerate(r.engines):
        if i:
            line.append(" · ", style="dim")
        line.append_text(remote(f"{e.name} {e.version or ''}".strip()))
        if e.ok:
            line.append(" ok", style="green")
        else:
            line.append(" failed: ", style="bold red")
            line.append_text(remote(e.error or "?", style="red"))
    return line


class VerifyPanel(Panel[VerifySection]):
    SECTION = "verify"
    TITLE = "Verify"

    def body(self, data: VerifySection) -> RenderableType:
        if not isinstance(data, VerifySection) or not data.looked:
            return dim("the probe did not look for a verify result")
        if data.result is None:
            return dim("not run here: b, then V, runs verify (kernels, copies, all-reduce)")
        r = data.result
        age = data.age_s()
        when = "" if age is None else f"{age_text(age)} ago"
        head = Text.assemble(
            Text(r.status, style={"ok": "green", "fail": "bold red"}.get(r.status, "yellow")),
            dim(f"  {when}" if when else ""),
            dim(f"  torch {r.torch.version} (CUDA {r.torch.cuda})" if r.torch.version else ""),
            dim(f"  driver {r.driver}" if r.driver else ""),
        )
        parts: list[RenderableType] = [head]
        if r.status == "refused":
            parts.append(remote(r.refused or "refused", style="yellow"))
        if r.status == "unknown":
            parts.extend(remote(n, style="yellow") for n in r.notes)
        if r.gpus:
            parts.append(_gpus(r))
        nccl = _nccl(r)
        if nccl is not None:
            parts.append(nccl)
        if r.status in ("ok", "fail") and r.torch.import_ok:
            parts.append(_engines(r))
        parts.extend(remote(f, style="red") for f in r.failures if r.status == "fail")
        return Group(*parts)
