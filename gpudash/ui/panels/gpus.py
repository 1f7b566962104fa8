"""The GPUs panel: a head line (count, shared architecture, driver, CUDA), a row per GPU in
index order, and the parser's notes, drawn as one text.

Each row ends in a health cell from the health section (the GPU matched by its PCI bus id):
the worst of what that section read for the GPU in a word or two ("Xid 79", "HW slow",
"x8/x16", "remap pending"; "+N" when more), "ok" where it read the GPU and saw nothing wrong,
"–" while it has not arrived. The cell took the ECC column's place: an uncorrectable ECC count
is one of its facts ("ECC 2"), and the panel keeps inside 80x24 (the Health panel has it all).

A `DataTable` held the rows before: a widget of its own with a header, a cursor and a
scrollbar, styled and laid out apart from the panel, and ~8 % of the CPU the first screen
costs. The rows have nothing to select; redrawing the panel's text on a re-probe is one
update of one widget, so nothing flickers and the panel keeps its scroll position.
"""

from __future__ import annotations

from typing import Literal

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.checks.facts import xid as xid_facts
from gpudash.model import SectionResult
from gpudash.probe.kernel_log import bus_key
from gpudash.probe.sections.gpus import Gpu, Gpus
from gpudash.probe.sections.health import Health
from gpudash.probe.smiq import SLOWDOWN_REASONS, GpuHealth
from gpudash.ui.host_state import short_gpu_name
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import NA, dim, join, remote
from gpudash.ui.widgets.grid import Column, Grid

COLUMNS = (
    ("idx", "#"),
    ("name", "GPU"),
    ("cc", "cc"),
    ("mem", "GiB"),  # used/total; "mem GiB" left the health column no room at 80x24
    ("temp", "°C"),
    ("util", "util"),
    ("power", "W"),
    ("pers", "pers"),
    ("mig", "MIG"),
    ("health", "health"),
)

_STYLE = {"fail": "bold red", "warn": "yellow", "info": "dim"}
_RANK = ("fail", "warn", "info")
_SLOW_WORDS = dict(
    zip(SLOWDOWN_REASONS, ("HW slow", "HW thermal", "power brake", "SW thermal"), strict=True)
)
BUSY_PERCENT = 20  # as checks/health.py: below it a PCIe generation under max is the idle downtrain


def _pair(a: float | int | None, b: float | int | None) -> Text:
    if a is None and b is None:
        return dim(NA)
    left = NA if a is None else f"{a:.0f}"
    right = NA if b is None else f"{b:.0f}"
    return Text(f"{left}/{right}")


def _gib(mib: int | None) -> float | None:
    return None if mib is None else mib / 1024


def _health_of(gpu: Gpu, health: Health, position: int) -> GpuHealth | None:
    """The health section's row for `gpu`: by PCI bus id, or by position when the GPU list
    has no bus ids and both lists are as long (nvidia-smi lists both in index order)."""
    key = bus_key(gpu.bus_id)
    if key is not None:
        return next((g for g in health.gpus if g.key == key), None)
    return health.gpus[position] if position < len(health.gpus) else None


def problems(gpu: Gpu, health: Health, position: int = 0) -> list[tuple[str, str]]:
    """What the health section read wrong for `gpu`, as (words, "fail"/"warn"/"info"), worst
    first; the severities are the health checks' (gpudash/checks/health.py)."""
    key = bus_key(gpu.bus_id)
    g = _health_of(gpu, health, position)
    key = key or (g.key if g is not None else None)
    found: list[tuple[str, str]] = []
    if key is not None and (key in health.unreachable or key in health.lost_gpus):
        found.append(("lost", "fail"))
    xids = [e for e in health.kernel.xids if key is not None and e.bus == key]
    if key is not None and key in health.kernel.fallen_off and not any(e.xid == 79 for e in xids):
        found.append(("off the bus", "fail"))
    graded = [(xid_facts.severity_of(e.xid, e.text), e.xid) for e in xids]
    for sev, code in dict.fromkeys(sorted(graded, key=lambda x: _RANK.index(x[0]))):
        found.append((f"Xid {code}", sev))
    ecc = gpu.ecc_uncorrected if g is None else g.ecc_uncorrected_volatile
    if ecc:
        found.append((f"ECC {ecc}", "fail"))
    if g is not None:
        found += _gpu_problems(g)
    return sorted(found, key=lambda p: _RANK.index(p[1]))


def _gpu_problems(g: GpuHealth) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if g.remap_failure:
        found.append(("remap FAILED", "fail"))
    if g.unrepairable_memory:
        found.append(("bad memory", "fail"))
    if g.sram_threshold_exceeded:
        found.append(("SRAM errors", "fail"))
    if g.recovery_action and g.recovery_action != "None":
        found.append(("must recover", "fail"))
    if g.remap_pending:
        found.append(("remap pending", "warn"))
    elif g.retired_pending or g.repair_pending:
        found.append(("reset pending", "warn"))
    found += [(_SLOW_WORDS[r], "warn") for r in g.reasons if r in _SLOW_WORDS]
    if g.pcie_width and g.pcie_width_max and g.pcie_width < g.pcie_width_max:
        found.append((f"x{g.pcie_width}/x{g.pcie_width_max}", "warn"))
    busy = g.util_percent is not None and g.util_percent > BUSY_PERCENT
    if busy and g.pcie_gen and g.pcie_gen_max and g.pcie_gen < g.pcie_gen_max:
        found.append((f"gen{g.pcie_gen}/{g.pcie_gen_max}", "warn"))
    return found


def health_cell(gpu: Gpu, health: Health | None, position: int = 0) -> Text:
    """The GPU's health in a word or two (see the module docstring); `health` is the health
    section's data, None while it has not arrived."""
    if health is None or health.missing:
        ecc = gpu.ecc_uncorrected
        return Text(f"ECC {ecc}", style=_STYLE["fail"]) if ecc else dim(NA)
    found = problems(gpu, health, position)
    if found:
        words, sev = found[0]
        cell = Text(words, style=_STYLE[sev])
        if len(found) > 1:
            cell.append(f" +{len(found) - 1}", style="dim")
        return cell
    return Text("ok") if _health_of(gpu, health, position) is not None else dim(NA)


def cells(gpu: Gpu, with_arch: bool = True) -> dict[str, Text]:
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
    }
    return row


_GIVE: dict[str, tuple[Literal["ellipsis", "wrap"], int]] = {
    "name": ("ellipsis", 12),
    "health": ("wrap", 7),
}
"""Columns that give way on a narrow panel: the name down to 12 cells ('RTX PRO 6000'), so
that the columns right of it stay in view; the health cell wraps under itself, never cut (its
words are 7 cells at most, the room an 8-GPU table leaves it at 80x24, so none is split)."""


def table(gpus: tuple[Gpu, ...], with_arch: bool, health: Health | None = None) -> Grid:
    """The GPU rows under a bold header; `health`: the health section's data, if any."""
    grid = Grid(
        *(
            Column(Text(label, style="bold"), give=_GIVE[key][0], min_width=_GIVE[key][1])
            if key in _GIVE
            else Column(Text(label, style="bold"))
            for key, label in COLUMNS
        )
    )
    ordered = sorted(gpus, key=lambda g: g.index)
    same_length = health is not None and len(health.gpus) == len(ordered)
    for n, gpu in enumerate(ordered):
        row = cells(gpu, with_arch)
        row["health"] = health_cell(gpu, health, n if same_length else len(ordered) + 1)
        grid.add_row(*(row[key] for key, _ in COLUMNS))
    return grid


class GpusPanel(Panel[Gpus]):
    SECTION = "gpus"
    ALSO = ("health",)  # the health column
    TITLE = "GPUs"

    def render_section(self, section: SectionResult) -> None:
        data = self.data_of(section)
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
            health = self.also.get("health")
            found = health.data if health is not None else None
            parts.append(
                table(data.gpus, shared_arch is None, found if isinstance(found, Health) else None)
            )
        parts.extend(remote(n, style="dim") for n in data.notes)
        self.draw(Group(*parts))
