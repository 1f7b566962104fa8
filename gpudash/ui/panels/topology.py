"""The NVLink / topology panel: the GPU × GPU (and × NIC) matrix coloured by link class.

Rows are GPUs; columns are GPUs and, unless hidden with `n`, NICs (the NIC × NIC block says
nothing about GPU placement and would cost the width that lets 8 GPUs and their NICs fit
at 100 columns). Wider matrices scroll sideways inside the panel.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from gpudash.model import SectionResult
from gpudash.ui import keys
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import dim, legend, link, remote


def _short(label: str) -> str:
    """'GPU3' -> 'G3', 'NIC10' -> 'N10': the header must stay as narrow as 'NV18'."""
    for long, short in (("GPU", "G"), ("NIC", "N")):
        if label.startswith(long) and label[len(long) :].isdigit():
            return short + label[len(long) :]
    return label


def _token(matrix: Any, a: str, b: str) -> str:
    links = getattr(matrix, "links", None)
    if isinstance(links, dict):
        value = links.get((a, b))
        if value is None:
            row = links.get(a)
            value = row.get(b) if isinstance(row, dict) else None
        return value or ""
    if callable(getattr(matrix, "link", None)):
        return matrix.link(a, b) or ""
    return ""


def _affinity(matrix: Any, gpu: str, attr: str) -> str | None:
    value = getattr(matrix, attr, None)
    if isinstance(value, dict):
        v = value.get(gpu)
    elif isinstance(value, (list, tuple)):
        names = list(matrix.gpus)
        v = value[names.index(gpu)] if gpu in names and names.index(gpu) < len(value) else None
    else:
        v = None
    return None if v in (None, "", "N/A") else str(v)


def matrix_table(matrix: Any, show_nics: bool) -> Table:
    gpus = list(matrix.gpus)
    nics = list(getattr(matrix, "nics", ()) or ()) if show_nics else []
    table = Table(box=None, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False)
    table.add_column("", no_wrap=True, style="bold")
    for col in gpus + nics:
        table.add_column(Text(_short(col), style="bold"), justify="center", no_wrap=True)
    for gpu in gpus:
        table.add_row(Text(_short(gpu)), *[link(_token(matrix, gpu, col)) for col in gpus + nics])
    return table


def affinity_lines(matrix: Any) -> list[Text]:
    """'G0-G3  CPUs 0-55,112-167  NUMA 0': GPUs in a row that share an affinity, grouped
    (a column per GPU would not fit beside 8 GPUs and their NICs at 100 columns)."""
    groups: list[tuple[list[str], str | None, str | None]] = []
    for gpu in matrix.gpus:
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


def nic_names(matrix: Any) -> Text | None:
    names = getattr(matrix, "nic_names", None) or {}
    if not names:
        return None
    out = Text("NICs: ", style="dim")
    items = names.items() if isinstance(names, dict) else enumerate(names)
    for i, (nic, name) in enumerate(items):
        if i:
            out.append("  ")
        label = nic if isinstance(nic, str) else f"NIC{nic}"
        out.append(_short(label), style="bold")
        out.append(" ")
        out.append(remote(name))
    return out


class TopologyPanel(Panel):
    SECTION = "topology"
    TITLE = "NVLink / topology"
    BINDINGS = keys.bindings(keys.TOPOLOGY_KEYS)
    DEFAULT_CSS = """
    TopologyPanel .topo-matrix { width: auto; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.show_nics = True
        self._section: SectionResult | None = None

    def compose_body(self) -> ComposeResult:
        yield Static("", classes="topo-summary")
        yield Static("", classes="topo-matrix")
        yield Static("", classes="topo-foot")

    def action_toggle_nics(self) -> None:
        self.show_nics = not self.show_nics
        if self._section is not None:
            self.render_section(self._section)

    def render_section(self, section: SectionResult) -> None:
        self._section = section
        data = section.data
        summary = self.query_one(".topo-summary", Static)
        grid = self.query_one(".topo-matrix", Static)
        foot = self.query_one(".topo-foot", Static)
        if data.missing:
            summary.update(remote(data.missing, style="yellow"))
            grid.display = foot.display = False
            return
        line = Text(data.summary, style="bold green" if data.all_nvlink else "bold")
        if data.inactive_links:
            line.append(f" · {data.inactive_links} NVLink links inactive", style="bold red")
        for state in sorted(set(getattr(data, "fabric_states", ()) or ())):
            if state != "Completed":
                line.append(" · fabric ", style="dim")
                line.append(remote(state, style="yellow"))
        summary.update(line)
        matrix = data.matrix
        grid.display = foot.display = matrix is not None and bool(matrix.gpus)
        if not grid.display:
            return
        grid.update(matrix_table(matrix, self.show_nics))
        foot_lines: list[Any] = [*affinity_lines(matrix), legend()]
        names = nic_names(matrix) if self.show_nics else None
        if names is not None:
            foot_lines.append(names)
        hidden = len(getattr(matrix, "nics", ()) or ())
        if not self.show_nics and hidden:
            foot_lines.append(dim(f"{hidden} NIC columns hidden (n)"))
        foot.update(Group(*foot_lines))
