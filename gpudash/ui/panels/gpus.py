"""The GPUs panel: a head line (count, shared architecture, driver, CUDA), a row per GPU in
index order, and the parser's notes, drawn as one text.

A `DataTable` held the rows before: a widget of its own with a header, a cursor and a
scrollbar, styled and laid out apart from the panel, and ~8 % of the CPU the first screen
costs. The rows have nothing to select; redrawing the panel's text on a re-probe is one
update of one widget, so nothing flickers and the panel keeps its scroll position.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.model import SectionResult
from gpudash.ui.host_state import short_gpu_name
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import NA, dim, join, remote
from gpudash.ui.widgets.grid import Column, Grid

COLUMNS = (
    ("idx", "#"),
    ("name", "GPU"),
    ("cc", "cc"),
    ("mem", "mem GiB"),
    ("temp", "°C"),
    ("util", "util"),
    ("power", "W"),
    ("pers", "pers"),
    ("mig", "MIG"),
    ("ecc", "ECC"),
)


def _pair(a: float | int | None, b: float | int | None) -> Text:
    if a is None and b is None:
        return dim(NA)
    left = NA if a is None else f"{a:.0f}"
    right = NA if b is None else f"{b:.0f}"
    return Text(f"{left}/{right}")


def _gib(mib: int | None) -> float | None:
    return None if mib is None else mib / 1024


def cells(gpu: Any, with_arch: bool = True) -> dict[str, Text]:
    """The row for one `Gpu`, column key -> cell (the arch moves to the head line when all
    GPUs share it, which keeps an 8-GPU table inside 100 columns)."""
    bad = "bold red" if gpu.error else ""
    name = remote(short_gpu_name(gpu.name), style=bad)
    if gpu.error:
        name.append(" ERR!", style="bold red")
    if gpu.cc:
        cc = Text(gpu.cc)
        if gpu.sm:
            cc.append(f" {gpu.sm}", style="bold")
        if gpu.arch and with_arch:
            cc.append(f" {gpu.arch}")
        if gpu.cc_source == "name":
            cc.append("?", style="yellow")
    else:
        cc = dim("?")
    util = dim(NA) if gpu.util_percent is None else Text(f"{gpu.util_percent}%")
    ecc = gpu.ecc_uncorrected
    ecc_cell = dim(NA) if ecc is None else Text(str(ecc), style="bold red" if ecc else "")
    mig = (
        dim(NA)
        if gpu.mig_mode is None
        else Text("on" if gpu.mig_mode == "Enabled" else "off", style="" if gpu.mig_mode else "dim")
    )
    pers = (
        dim(NA)
        if gpu.persistence is None
        else Text("on" if gpu.persistence else "off", style="" if gpu.persistence else "yellow")
    )
    row = {
        "idx": Text(str(gpu.index), style=bad),
        "name": name,
        "cc": cc,
        "mem": _pair(_gib(gpu.memory_used_mib), _gib(gpu.memory_total_mib)),
        "temp": dim(NA) if gpu.temp_c is None else Text(str(gpu.temp_c)),
        "util": util,
        "power": _pair(gpu.power_w, gpu.power_limit_w),
        "pers": pers,
        "mig": mig,
        "ecc": ecc_cell,
    }
    return row


def table(gpus: tuple[Any, ...], with_arch: bool) -> Grid:
    """The GPU rows under a bold header. On a narrow panel the name gives way, down to 12
    cells ('RTX PRO 6000'), so that the columns right of it stay in view."""
    grid = Grid(
        *(
            Column(Text(label, style="bold"), give="ellipsis", min_width=12)
            if key == "name"
            else Column(Text(label, style="bold"))
            for key, label in COLUMNS
        )
    )
    for gpu in sorted(gpus, key=lambda g: g.index):
        row = cells(gpu, with_arch)
        grid.add_row(*(row[key] for key, _ in COLUMNS))
    return grid


class GpusPanel(Panel):
    SECTION = "gpus"
    TITLE = "GPUs"

    def render_section(self, section: SectionResult) -> None:
        data = section.data
        if data.missing:
            self.draw(remote(data.missing, style="yellow"), muted=True)
            return
        archs = {g.arch for g in data.gpus if g.arch}  # an ERR! GPU has none: not a second arch
        shared_arch = next(iter(archs)) if len(archs) == 1 else None
        broken = [str(g.index) for g in data.gpus if g.error]
        head = join(
            Text(f"{len(data.gpus)} GPU{'s' * (len(data.gpus) != 1)}"),
            remote(shared_arch) if shared_arch else "",
            Text.assemble("driver ", remote(data.driver_version)),
            Text.assemble("CUDA ", remote(data.cuda_version)),
            Text(f"ERR! on GPU {','.join(broken)}", style="bold red") if broken else "",
        )
        head.stylize_before(self.get_component_rich_style("panel--muted"))
        parts: list[RenderableType] = [head]
        if data.gpus:
            parts.append(table(data.gpus, with_arch=shared_arch is None))
        parts.extend(remote(n, style="dim") for n in data.notes)
        self.draw(Group(*parts))
