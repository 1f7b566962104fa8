"""The GPUs panel: one keyed row per GPU, cells updated in place when a re-probe lands."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from gpudash.model import SectionResult
from gpudash.ui.host_state import short_gpu_name
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import NA, dim, join, remote

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


def _pad(text: Text) -> Text:
    """A cell with one space after it: the table runs with no cell padding to fit 80 cols."""
    return text + Text(" ")


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
    return {k: _pad(v) for k, v in row.items()}


class GpusPanel(Panel):
    SECTION = "gpus"
    TITLE = "GPUs"
    DEFAULT_CSS = """
    GpusPanel DataTable { height: auto; max-height: 100%; scrollbar-size: 0 0; }
    """

    def compose_body(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(
            cursor_type="none", zebra_stripes=False, cell_padding=0, show_cursor=False
        )
        table.can_focus = False
        yield table
        yield Static("", classes="gpus-notes")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in COLUMNS:
            table.add_column(Text(label + " ", style="bold"), key=key)
        self._rows: dict[str, dict[str, Text]] = {}
        super().on_mount()

    def render_section(self, section: SectionResult) -> None:
        data = section.data
        notes = self.query_one(".gpus-notes", Static)
        archs = {g.arch for g in data.gpus if g.arch}  # an ERR! GPU has none: not a second arch
        shared_arch = next(iter(archs)) if len(archs) == 1 else None
        if data.missing:
            self.draw(remote(data.missing, style="yellow"), muted=True)
        else:
            broken = [str(g.index) for g in data.gpus if g.error]
            self.draw(
                join(
                    Text(f"{len(data.gpus)} GPU{'s' * (len(data.gpus) != 1)}"),
                    remote(shared_arch) if shared_arch else "",
                    Text.assemble("driver ", remote(data.driver_version)),
                    Text.assemble("CUDA ", remote(data.cuda_version)),
                    Text(f"ERR! on GPU {','.join(broken)}", style="bold red") if broken else "",
                ),
                muted=True,
            )
        table = self.query_one(DataTable)
        table.display = bool(data.gpus)
        self._update_rows(table, data.gpus, with_arch=shared_arch is None)
        lines = [remote(n, style="dim") for n in data.notes]
        notes.display = bool(lines)
        notes.update(Text("\n").join(lines))

    def _update_rows(self, table: DataTable[Text], gpus: tuple[Any, ...], with_arch: bool) -> None:
        """Rows keyed by GPU index; only changed cells are written (no flicker, no jump)."""
        wanted = {str(g.index): cells(g, with_arch) for g in gpus}
        with self.app.batch_update():
            for key in list(self._rows):
                if key not in wanted:
                    table.remove_row(key)
                    del self._rows[key]
            for key, row in wanted.items():
                old = self._rows.get(key)
                if old is None:
                    table.add_row(*row.values(), key=key)
                else:
                    for col, value in row.items():
                        if old.get(col) != value:
                            table.update_cell(key, col, value, update_width=True)
                self._rows[key] = row
