"""The NVLink / topology panel: the GPU × GPU (and × NIC) matrix coloured by link class.

Rows are GPUs. By default the columns are the GPUs plus one "nearest NIC" column (the NICs
with the best PCIe class to that GPU, which is what GPUDirect RDMA placement needs): that
keeps 8 GPUs and a dozen NICs inside 100 columns. `n` swaps in one column per NIC; wider
matrices scroll sideways inside the panel. The NIC × NIC block is never shown: it says
nothing about GPU placement.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from gpudash.model import SectionResult
from gpudash.probe.sections.topology import Topology
from gpudash.probe.topo import Topology as TopoMatrix
from gpudash.text import is_uint
from gpudash.ui import keys
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import dim, legend, link, remote
from gpudash.ui.widgets.grid import Column, Grid


def _short(label: str) -> str:
    """'GPU3' -> 'G3', 'NIC10' -> 'N10': the header must stay as narrow as 'NV18'."""
    for long, short in (("GPU", "G"), ("NIC", "N")):
        if label.startswith(long) and is_uint(label[len(long) :]):
            return short + label[len(long) :]
    return label


def _token(matrix: TopoMatrix, a: str, b: str) -> str:
    return matrix.link(a, b) or ""


def _affinity(matrix: TopoMatrix, gpu: str, attr: str) -> str | None:
    value = getattr(matrix, attr, None)
    if isinstance(value, dict):
        v = value.get(gpu)
    elif isinstance(value, (list, tuple)):
        names = list(matrix.gpus)
        v = value[names.index(gpu)] if gpu in names and names.index(gpu) < len(value) else None
    else:
        v = None
    return None if v in (None, "", "N/A") else str(v)


def nearest(matrix: TopoMatrix, gpu: str) -> Text:
    """'N0,N3 PXB': the NICs closest to `gpu`, with their link class."""
    nics = matrix.nearest_nics(gpu)
    if not nics:
        return dim("–")
    out = Text(",".join(_short(n) for n in nics[:3]))
    if len(nics) > 3:
        out.append(f"+{len(nics) - 3}", style="dim")
    out.append(" ")
    out.append(link(_token(matrix, gpu, nics[0])))
    return out


MAX_DRAWN = 32
"""GPUs (and NICs) drawn in the matrix at most. A real board has 8 or 16; a host printing a
9000-column header would otherwise cost 81M cells drawn on the event loop, freezing every
host's screen (bench/bench_hostile_keys.py found it). The rest is said in one line."""


def matrix_table(matrix: TopoMatrix, all_nics: bool) -> Grid:
    gpus = list(matrix.gpus[:MAX_DRAWN])
    nics = list(matrix.nics[:MAX_DRAWN]) if all_nics else []
    compact = bool(matrix.nics) and not all_nics
    table = Grid(
        Column(style="bold"),
        *(Column(Text(_short(col), style="bold"), justify="center") for col in gpus + nics),
        *([Column(Text("nearest NIC", style="bold"))] if compact else []),
    )
    for gpu in gpus:
        cells = [link(_token(matrix, gpu, col)) for col in gpus + nics]
        if compact:
            cells.append(nearest(matrix, gpu))
        table.add_row(Text(_short(gpu)), *cells)
    return table


def affinity_lines(matrix: TopoMatrix) -> list[Text]:
    """'G0-G3  CPUs 0-55,112-167  NUMA 0': GPUs in a row that share an affinity, grouped
    (a column per GPU would not fit beside 8 GPUs and their NICs at 100 columns)."""
    groups: list[tuple[list[str], str | None, str | None]] = []
    for gpu in matrix.gpus[:MAX_DRAWN]:
        cpu = _affinity(matrix, gpu, "cpu_affinity")
        numa = _affinity(matrix, gpu, "numa_affinity")
        if groups and groups[-1][1:] == (cpu, numa):
            groups[-1][0].append(gpu)
        else:
            groups.append(([gpu], cpu, numa))
    if all(cpu is None and numa is None for _, cpu, numa in groups):
        return [dim("CPU/NUMA affinity: not reported")]
    lines = []
    for members, cpu, numa in groups:
        label = _short(members[0]) + (f"-{_short(members[-1])}" if len(members) > 1 else "")
        line = Text(f"{label:<7}", style="bold")
        line.append("CPUs ", style="dim")
        line.append(remote(cpu) if cpu else dim("–"))
        line.append("  NUMA ", style="dim")
        line.append(remote(numa) if numa else dim("–"))
        lines.append(line)
    return lines


def nic_names(matrix: TopoMatrix) -> Text | None:
    names = matrix.nic_names
    if not names:
        return None
    out = Text("NICs: ", style="dim")
    for i, (nic, name) in enumerate(names.items()):
        if i:
            out.append("  ")
        out.append(_short(nic), style="bold")
        out.append(" ")
        out.append(remote(name))
    return out


class TopologyPanel(Panel[Topology]):
    SECTION = "topology"
    TITLE = "NVLink / topology"
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.TOPOLOGY_KEYS)
    DEFAULT_CSS = """
    TopologyPanel .topo-matrix { width: auto; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.show_nics = False  # one column per NIC (else one "nearest NIC" column)
        self.nic_key = "n"
        """The key that toggles the NIC columns, as the config's [keys] remap it (the app
        sets it: attributes down)."""
        self._section: SectionResult | None = None

    def compose_body(self) -> ComposeResult:
        yield Static("", classes="topo-matrix")
        yield Static("", classes="topo-foot")

    def _nic_binding(self) -> Binding:
        return Binding(self.nic_key, "toggle_nics")

    def action_toggle_nics(self) -> None:
        self.show_nics = not self.show_nics
        if self._section is not None:
            self.render_section(self._section)

    def render_section(self, section: SectionResult) -> None:
        self._section = section
        data = self.data_of(section)
        grid = self.query_one(".topo-matrix", Static)
        foot = self.query_one(".topo-foot", Static)
        if data.missing:
            self.draw(remote(data.missing, style="yellow"))
            grid.display = foot.display = False
            return
        line = Text(data.summary, style="bold green" if data.all_nvlink else "bold")
        if data.inactive_links:
            line.append(f" · {data.inactive_links} NVLink links inactive", style="bold red")
        for state in sorted(set(data.fabric_states)):
            if state != "Completed":
                line.append(" · fabric ", style="dim")
                line.append(remote(state, style="yellow"))
        self.draw(line)
        matrix = data.matrix
        grid.display = foot.display = matrix is not None and bool(matrix.gpus)
        if matrix is None or not matrix.gpus:
            return
        grid.update(matrix_table(matrix, self.show_nics))
        foot_lines: list[RenderableType] = []
        hidden = max(0, len(matrix.gpus) - MAX_DRAWN), max(0, len(matrix.nics) - MAX_DRAWN)
        if any(hidden):
            foot_lines.append(
                Text(
                    f"matrix cut to {MAX_DRAWN} GPUs and NICs: {hidden[0]} more GPUs and "
                    f"{hidden[1]} more NICs reported",
                    style="yellow",
                )
            )
        foot_lines += [*affinity_lines(matrix), legend()]
        names = nic_names(matrix)
        if names is not None:
            foot_lines.append(names)
        if matrix.nics:
            key = self.app.get_key_display(self._nic_binding())
            what = "the closest NICs only" if self.show_nics else "a column for every NIC"
            foot_lines.append(dim(f"{key}: show {what}"))
        foot.update(Group(*foot_lines))
