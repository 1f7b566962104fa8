"""The Health panel: per GPU what slows or breaks it (clock slowdowns, PCIe link, memory
errors, Xids), then the host's facts around the GPUs (kernel log, lost GPUs, fabric manager,
RDMA ports, /dev/shm, memlock). The verdicts are the Findings panel's; this panel shows what
the probe read, so a finding can be checked against it at a glance.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.probe.sections.health import Health
from gpudash.probe.smiq import SLOWDOWN_REASONS, GpuHealth
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import NA, dim, join, remote
from gpudash.ui.widgets.grid import Column, Grid

_BAD = "bold red"


def _clocks(g: GpuHealth) -> Text:
    slow = [r for r in g.reasons if r in SLOWDOWN_REASONS]
    if slow:
        return Text(", ".join(slow), style=_BAD)
    if not g.reasons_read:
        return dim(NA)
    return Text(", ".join(g.reasons) or "full", style="dim" if g.reasons else "")


def _pcie(g: GpuHealth) -> Text:
    if g.pcie_gen is None and g.pcie_width is None:
        return dim(NA)
    narrow = g.pcie_width is not None and g.pcie_width_max and g.pcie_width < g.pcie_width_max
    cell = Text(f"gen{g.pcie_gen or '?'}/{g.pcie_gen_max or '?'} ")
    cell.append(f"x{g.pcie_width or '?'}/{g.pcie_width_max or '?'}", style=_BAD if narrow else "")
    return cell


def _memory(g: GpuHealth) -> Text:
    bits: list[tuple[str, str]] = []
    if g.remap_failure:
        bits.append(("remap FAILED", _BAD))
    if g.remap_pending or g.retired_pending:
        bits.append(("reset pending", "yellow"))
    if g.ecc_uncorrected_volatile:
        bits.append((f"{g.ecc_uncorrected_volatile} uncorr.", _BAD))
    if g.remap_uncorrectable:
        bits.append((f"{g.remap_uncorrectable} rows remapped", "yellow"))
    if bits:
        return Text(" ").join(Text(w, style=s) for w, s in bits)
    if g.remap_pending is None and g.ecc_uncorrected_volatile is None:
        return dim(NA)
    return Text("ok")


def gpu_rows(data: Health) -> Grid:
    """One row per GPU nvidia-smi -q listed, in its order (the index order)."""
    xids: Counter[str | None] = Counter()
    for e in data.kernel.xids:  # one entry per (GPU, Xid) with its count: lines, not kinds
        xids[e.bus] += e.count
    grid = Grid(
        Column(Text("#", style="bold")),
        Column(Text("bus", style="bold")),
        Column(Text("clocks", style="bold"), give="ellipsis", min_width=6),
        Column(Text("PCIe", style="bold")),
        Column(Text("memory", style="bold"), give="ellipsis", min_width=4),
        Column(Text("Xid", style="bold")),
    )
    for i, g in enumerate(data.gpus):
        n = xids.get(g.key, 0)
        grid.add_row(
            Text(str(i)),
            remote(g.key or g.bus_id),
            _clocks(g),
            _pcie(g),
            _memory(g),
            Text(str(n), style=_BAD) if n else dim("0"),
        )
    return grid


def host_line(data: Health) -> Text:
    k = data.kernel
    if k.source is None:
        klog = Text.assemble(("kernel log unreadable", "yellow"))
    else:
        klog = Text.assemble("kernel log ", remote(k.source))
        if k.xids:
            klog.append(f" · {sum(e.count for e in k.xids)} Xid", style=_BAD)
    lost = sorted(set(data.lost_gpus) | set(data.unreachable))
    fm = data.fabric_manager
    ports = data.rdma
    up = sum(p.state == "ACTIVE" for p in ports)
    shm = data.shm_kib
    return join(
        klog,
        Text(f"lost: {', '.join(lost)}", style=_BAD) if lost else "",
        Text(f"fabric manager {fm.active or '?'}", style="" if fm.active == "active" else _BAD)
        if fm is not None
        else "",
        Text(f"RDMA {up}/{len(ports)} up", style="" if up == len(ports) else "yellow")
        if ports
        else "",
        Text(f"/dev/shm {shm / 1024 / 1024:.0f} GiB") if shm is not None else "",
        Text("memlock unlimited")
        if data.memlock_unlimited
        else Text(f"memlock {data.memlock_kib} KiB")
        if data.memlock_kib is not None
        else "",
    )


class HealthPanel(Panel[Health]):
    SECTION = "health"
    TITLE = "Health"

    def body(self, data: Health) -> RenderableType:
        parts: list[RenderableType] = []
        if data.missing:
            parts.append(remote(data.missing, style="yellow"))
        elif data.gpus:
            parts.append(gpu_rows(data))
        parts.append(host_line(data))
        parts.extend(remote(n, style="dim") for n in data.notes)
        return Group(*parts)
