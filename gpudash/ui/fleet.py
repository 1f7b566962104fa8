"""The fleet view (`f`): one row per host, key facts side by side, odd values highlighted.

The table draws only the rows on screen (`FleetTable`): a host's cells are built when its
row comes into view, and the table learns a row's cell widths from the values alone, cached
per distinct value, so opening the view with 1000 hosts builds a screenful of cells, not
10,000 of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from gpudash.model import HostResult
from gpudash.ui import keys
from gpudash.ui.fleet_columns import COLUMNS, cell, majority_of, sort_key
from gpudash.ui.fleet_table import FleetTable
from gpudash.ui.footer import Footer


class FleetScreen(Screen[str | None]):
    """Dismisses with the name of the host to open, or None."""

    BINDINGS = keys.bindings(keys.FLEET_KEYS)

    def __init__(self, order: Iterable[str], results: Mapping[str, HostResult]) -> None:
        super().__init__()
        self._order = list(order)
        self._results = dict(results)
        self._sort: int | None = None  # index into COLUMNS; None = config order
        self._usual: dict[str, str | None] = {}  # each column's majority, as last drawn
        self._values: dict[str, dict[str, str | None]] = {}  # host -> column -> value
        self._counts: dict[str, Counter[str]] = {c.key: Counter() for c in COLUMNS}
        self._width_of: dict[tuple[str, str | None], int] = {}  # (column, value) -> cell width

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="fleet-title")
        labels = [Text(c.label, style="bold") for c in COLUMNS]
        yield FleetTable(labels, self._row_cells, id="fleet-table")
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
        self.refresh_rows()

    def update_host(self, result: HostResult) -> None:
        self._results[result.name] = result
        self.refresh_rows([result.name])

    def refresh_rows(self, changed: Iterable[str] | None = None) -> None:
        """Tell the table which hosts changed; it redraws those rows if they are on screen.

        With `changed`, only those hosts are tallied and re-measured, and every row is
        redrawn only when a column's usual value moved (its highlights move with it):
        rebuilding all rows on each probe event cost O(hosts²) cell renders a round."""
        table = self.query_one(FleetTable)
        names = self._order if changed is None else [n for n in changed if n in self._results]
        for name in names:
            self._tally(self._results[name])
        usual = {c.key: majority_of(self._counts[c.key]) for c in COLUMNS}
        moved = usual != self._usual
        self._usual = usual
        table.set_rows((name, self._widths(name)) for name in names)
        if moved:
            table.refresh_rows()

    def _widths(self, name: str) -> list[int]:
        """The cell widths of a host's row, from its values: a cell is its value, cut (its
        style aside), so each distinct value of a column is measured once."""
        widths = []
        for column, value in zip(COLUMNS, self._values[name].values(), strict=True):
            width = self._width_of.get((column.key, value))
            if width is None:
                width = cell(self._results[name], column, None).cell_len
                self._width_of[(column.key, value)] = width
            widths.append(width)
        return widths

    def _row_cells(self, name: str) -> list[Text]:
        """A host's cells as drawn: asked for by the table when the row comes into view."""
        result = self._results[name]
        return [cell(result, c, self._usual[c.key]) for c in COLUMNS]

    def cell(self, name: str, column: str) -> Text:
        """The cell of host `name` in `column` (a column key), highlighted as drawn."""
        found = next(c for c in COLUMNS if c.key == column)
        return cell(self._results[name], found, self._usual[column])

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

        def key(host: str) -> tuple[object, ...]:
            if self._sort is None:
                return (order.get(host, len(order)),)
            return (sort_key(self._results[host], COLUMNS[self._sort]), order.get(host, len(order)))

        self.query_one(FleetTable).sort(key)
        self.query_one("#fleet-title", Static).update(self._title())

    def action_sort(self) -> None:
        nxt = 0 if self._sort is None else self._sort + 1
        self._sort = None if nxt >= len(COLUMNS) else nxt
        self._apply_sort()

    @on(FleetTable.HeaderSelected)
    def _header(self, event: FleetTable.HeaderSelected) -> None:
        self._sort = event.column
        self._apply_sort()

    @on(FleetTable.RowSelected)
    def _row(self, event: FleetTable.RowSelected) -> None:
        self.dismiss(event.key)

    def action_open(self) -> None:
        key = self.query_one(FleetTable).cursor_key
        if key is not None:
            self.dismiss(key)

    def action_close(self) -> None:
        self.dismiss(None)

    @property
    def rows(self) -> list[str]:
        """Host names in the order the table shows them."""
        return self.query_one(FleetTable).rows
