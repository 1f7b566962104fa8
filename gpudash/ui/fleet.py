"""The fleet view (`f`): one row per host, key facts side by side, odd values highlighted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from gpudash.model import HostResult
from gpudash.ui import keys
from gpudash.ui.fleet_columns import COLUMNS, cell, majority_of, sort_key
from gpudash.ui.footer import Footer


class FleetScreen(Screen[str | None]):
    """Dismisses with the name of the host to open, or None."""

    BINDINGS = keys.bindings(keys.FLEET_KEYS)

    def __init__(self, order: Iterable[str], results: Mapping[str, HostResult]) -> None:
        super().__init__()
        self._order = list(order)
        self._results = dict(results)
        self._sort: int | None = None  # index into COLUMNS; None = config order
        self._cells: dict[str, dict[str, Text]] = {}
        self._usual: dict[str, str | None] = {}  # each column's majority, as last drawn
        self._values: dict[str, dict[str, str | None]] = {}  # host -> column -> value
        self._counts: dict[str, Counter[str]] = {c.key: Counter() for c in COLUMNS}

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="fleet-title")
        table: DataTable[Text] = DataTable(cursor_type="row", id="fleet-table", cell_padding=1)
        yield table
        yield Footer()

    def _title(self) -> Text:
        title = Text(" fleet ", style="bold reverse")
        title.append(f"  {len(self._order)} hosts · sorted by ")
        title.append(
            "config order" if self._sort is None else COLUMNS[self._sort].label, style="bold"
        )
        title.append(" · highlighted: differs from most hosts", style="dim")
        return title

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for column in COLUMNS:
            table.add_column(Text(column.label, style="bold"), key=column.key)
        self.refresh_rows()
        self._apply_sort()

    def update_host(self, result: HostResult) -> None:
        self._results[result.name] = result
        self.refresh_rows([result.name])

    def refresh_rows(self, changed: Iterable[str] | None = None) -> None:
        """Write only the cells that changed, by row key (host) and column key.

        With `changed`, only those hosts' rows are rebuilt, and every row only when a
        column's usual value moved: rebuilding all rows on each probe event cost O(hosts²)
        cell renders a round (1000 hosts: seconds of frozen screen)."""
        table = self.query_one(DataTable)
        names = self._order if changed is None else [n for n in changed if n in self._results]
        for name in names:
            self._tally(self._results[name])
        usual = {c.key: majority_of(self._counts[c.key]) for c in COLUMNS}
        if changed is None or usual != self._usual:
            names = self._order
        self._usual = usual
        hosts = [self._results[n] for n in names]
        with self.app.batch_update():
            for host in hosts:
                row = {c.key: cell(host, c, usual[c.key]) for c in COLUMNS}
                old = self._cells.get(host.name)
                if old is None:
                    table.add_row(*row.values(), key=host.name)
                else:
                    for key, value in row.items():
                        if old[key] != value:
                            table.update_cell(host.name, key, value, update_width=True)
                self._cells[host.name] = row

    def _tally(self, result: HostResult) -> None:
        """Move this host's column values in the per-column counts the majorities use."""
        new = {c.key: c.value(result) for c in COLUMNS}
        old = self._values.get(result.name, {})
        for key, value in new.items():
            was = old.get(key)
            if was == value:
                continue
            if was is not None:
                self._counts[key][was] -= 1
                if not self._counts[key][was]:
                    del self._counts[key][was]
            if value is not None:
                self._counts[key][value] += 1
        self._values[result.name] = new

    def _apply_sort(self) -> None:
        order = {n: i for i, n in enumerate(self._order)}
        table = self.query_one(DataTable)

        def key(name: Text) -> tuple[object, ...]:
            host = name.plain
            if self._sort is None:
                return (order[host],)
            return (sort_key(self._results[host], COLUMNS[self._sort]), order[host])

        with self.app.batch_update():
            table.sort("host", key=key)
        self.query_one("#fleet-title", Static).update(self._title())

    def action_sort(self) -> None:
        nxt = 0 if self._sort is None else self._sort + 1
        self._sort = None if nxt >= len(COLUMNS) else nxt
        self._apply_sort()

    @on(DataTable.HeaderSelected)
    def _header(self, event: DataTable.HeaderSelected) -> None:
        keys_ = [c.key for c in COLUMNS]
        self._sort = keys_.index(str(event.column_key.value))
        self._apply_sort()

    @on(DataTable.RowSelected)
    def _row(self, event: DataTable.RowSelected) -> None:
        self.dismiss(str(event.row_key.value))

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
            self.dismiss(str(row_key.value))

    def action_close(self) -> None:
        self.dismiss(None)

    @property
    def rows(self) -> list[str]:
        """Host names in the order the table shows them."""
        table = self.query_one(DataTable)
        return [str(table.coordinate_to_cell_key((i, 0))[0].value) for i in range(table.row_count)]
