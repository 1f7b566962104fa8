"""The fleet view (`f`): one row per host, key facts side by side, odd values highlighted.

The table draws only the rows on screen (`FleetTable`): a host's cells are built when its
row comes into view. Every host's column values, the per-column counts its highlights are
taken from and its cells' widths are kept by the app as probe events arrive (`FleetRows`),
so opening the view with 1000 hosts reads them instead of computing 10,000 values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Static

from gpudash.model import HostResult
from gpudash.ui import keys
from gpudash.ui.data_age import fleet_words, refresh_words
from gpudash.ui.widgets.fleet_columns import COLUMNS, cell, value_sort_key
from gpudash.ui.widgets.fleet_rows import FleetRows
from gpudash.ui.widgets.fleet_table import FleetTable
from gpudash.ui.widgets.footer import Footer

_INDEX = {c.key: i for i, c in enumerate(COLUMNS)}

AGE_TICK_S = 1.0
"""How often the title's "probed N s ago" is worded again."""


class FleetScreen(Screen[str | None]):
    """Dismisses with the name of the host to open, or None."""

    _title_words = ""
    """The title's text as last drawn: it is redrawn only when its words change."""

    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.FLEET_KEYS)

    def __init__(self, order: Iterable[str], results: Mapping[str, HostResult]) -> None:
        super().__init__()
        self._order = list(order)
        self._results = dict(results)
        self._sort: int | None = None  # index into COLUMNS; None = config order
        self._reverse = False
        self._usual: list[str | None] = []  # each column's majority, as last drawn
        self._fleet = FleetRows()  # the app's, once mounted

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="fleet-title")
        labels = [Text(c.label, style="bold") for c in COLUMNS]
        floors = [c.floor for c in COLUMNS]
        first = [i for i, c in enumerate(COLUMNS) if c.gives_first]
        extras = [i for i, c in enumerate(COLUMNS) if c.extra]
        yield FleetTable(
            labels, self._row_cells, floors=floors, first=first, extras=extras, id="fleet-table"
        )
        yield Footer()

    def _title(self) -> Text:
        title = Text(" fleet ", style="bold reverse")
        title.append(f"  {len(self._order)} hosts · ")
        app: Any = self.app
        probed = getattr(app, "probed_at", None)
        if probed is not None:  # first: the most useful words once the line is cut
            title.append(fleet_words(probed.values(), app.clock(), len(self._order)))
            title.append(f" · {refresh_words(app.refresh_s)} · ")
        title.append("sorted by ")
        title.append(
            "config order" if self._sort is None else COLUMNS[self._sort].label, style="bold"
        )
        if self._reverse:
            title.append(" reversed", style="bold")
        title.append(" · highlighted: differs from most hosts", style="dim")
        return title

    def _tick(self) -> None:
        title = self._title()
        if title.plain != self._title_words:
            self._title_words = title.plain
            self.query_one("#fleet-title", Static).update(title)

    def on_mount(self) -> None:
        self._title_words = ""
        self.set_interval(AGE_TICK_S, self._tick)
        self._fleet = FleetRows.of(self.app)
        self.refresh_rows()

    def update_host(self, result: HostResult) -> None:
        self._results[result.name] = result
        self.refresh_rows([result.name])

    def refresh_rows(self, changed: Iterable[str] | None = None) -> None:
        """Tell the table which hosts changed; it redraws those rows if they are on screen.

        With `changed`, only those hosts are looked at, and every row is redrawn only when
        a column's usual value moved (its highlights move with it): rebuilding all rows on
        each probe event cost O(hosts²) cell renders a round."""
        table = self.query_one(FleetTable)
        fleet = self._fleet
        if changed is None:
            names: Iterable[str] = self._order
            fleet.sync(self._results)  # kept by the app: only what it has not seen yet
        else:
            names = [n for n in changed if n in self._results]
            for name in names:
                fleet.update(self._results[name])
        usual = fleet.usual()
        moved = usual != self._usual
        self._usual = usual
        widths = fleet.widths
        table.set_rows((name, widths[name]) for name in names)
        if moved:
            table.refresh_rows()

    def _row_cells(self, name: str) -> list[Text]:
        """A host's cells as drawn: asked for by the table when the row comes into view."""
        result = self._results[name]
        values = self._fleet.values[name]
        return [
            cell(result, c, usual, value)
            for c, usual, value in zip(COLUMNS, self._usual, values, strict=True)
        ]

    def cell(self, name: str, column: str) -> Text:
        """The cell of host `name` in `column` (a column key), highlighted as drawn."""
        i = _INDEX[column]
        return cell(self._results[name], COLUMNS[i], self._usual[i], self._fleet.values[name][i])

    def _apply_sort(self) -> None:
        order = {n: i for i, n in enumerate(self._order)}

        values = self._fleet.values
        column = self._sort

        def key(host: str) -> tuple[object, ...]:
            if column is None:
                return (order.get(host, len(order)),)
            return (value_sort_key(values[host][column]), order.get(host, len(order)))

        table = self.query_one(FleetTable)
        if self._reverse:  # unreported values stay last either way
            ordered = sorted(table.rows, key=key)
            known = [h for h in ordered if column is None or values[h][column] is not None]
            unknown = ordered[len(known) :]  # `value_sort_key` puts them at the end
            rank = {h: i for i, h in enumerate([*reversed(known), *unknown])}
            table.sort(rank.__getitem__)
        else:
            table.sort(key)
        self.query_one("#fleet-title", Static).update(self._title())

    def action_sort(self) -> None:
        """The next column on screen (an extra column there is no room for is skipped),
        then back to config order."""
        shown = self.query_one(FleetTable).shown_widths
        nxt = 0 if self._sort is None else self._sort + 1
        while nxt < len(COLUMNS) and shown[nxt] is None:
            nxt += 1
        self._sort = None if nxt >= len(COLUMNS) else nxt
        self._apply_sort()

    def action_reverse(self) -> None:
        self._reverse = not self._reverse
        self._apply_sort()

    @on(FleetTable.HeaderSelected)
    def _header(self, event: FleetTable.HeaderSelected) -> None:
        """A header sorts by its column; the sorted column's header reverses it."""
        if self._sort == event.column:
            self._reverse = not self._reverse
        else:
            self._sort, self._reverse = event.column, False
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
