"""A table that draws only the rows on screen: the fleet view's one row per host.

Textual's `DataTable` measures and renders every cell it is given: opening the fleet view
with 1000 hosts spent ~300 ms adding 10,000 cells, most of them never on screen. This table
is a Line API widget (`ScrollView` + `render_line`): it keeps, per row, only its key and the
width of each cell, and asks its owner for a row's cells (`cells(key)`) when that row comes
into view, caching the drawn line until the row changes. Column widths are kept as counts
of cell widths, so a changed cell moves a column's width without re-measuring any other row.
Cells are `Text` and are drawn as text, never parsed as markup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gpudash.ui.keys import moves

GAP = 1
"""Blank cells before every cell: ten columns must fit 100 cells."""


def fit_widths(
    widths: Sequence[int],
    floors: Sequence[int | None],
    room: int,
    first: Collection[int] = (),
) -> list[int]:
    """Each column's shown width: its own where the row fits in `room` cells; otherwise
    the columns that may give way are cut, none below its floor (a None floor never gives):
    the columns in `first` (long free text, such as a host's error) before the others, and
    within each group the widest, level with each other. Cutting the widest first keeps
    every column readable rather than dropping the last ones off the screen; what still
    does not fit scrolls."""
    shown = list(widths)
    excess = sum(shown) + GAP * len(shown) - room
    groups = [[i for i in first], [i for i in range(len(shown)) if i not in first]]
    for group in groups:
        while excess > 0:
            can = [i for i in group if (f := floors[i]) is not None and shown[i] > f]
            if not can:
                break
            top = max(shown[i] for i in can)
            for i in reversed(can):  # ties: the columns to the right give first
                if shown[i] == top and excess > 0:
                    shown[i] -= 1
                    excess -= 1
    return shown


def with_extras(
    widths: Sequence[int],
    floors: Sequence[int | None],
    room: int,
    first: Collection[int] = (),
    extras: Collection[int] = (),
) -> list[int | None]:
    """`fit_widths` where the `extras` columns show only while every column so far fits at
    its full width (in order, left to right); a hidden column's width is None."""
    base = [i for i in range(len(widths)) if i not in extras]
    used = sum(widths[i] + GAP for i in base)
    visible = set(base)
    for i in sorted(extras):
        if used + widths[i] + GAP <= room:
            visible.add(i)
            used += widths[i] + GAP
    order = sorted(visible)
    fitted = fit_widths(
        [widths[i] for i in order],
        [floors[i] for i in order],
        room,
        [k for k, i in enumerate(order) if i in first],
    )
    out: list[int | None] = [None] * len(widths)
    for k, i in enumerate(order):
        out[i] = fitted[k]
    return out


class FleetTable(ScrollView, can_focus=True):
    """Keyed rows, a row cursor, a fixed header; rows drawn on demand from `cells(key)`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First row", show=False),
        Binding("end", "last", "Last row", show=False),
        *moves("cursor_down", "cursor_up", "first", "last"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {"fleet-table--header", "fleet-table--cursor"}

    DEFAULT_CSS = """
    FleetTable {
        background: $surface;
        color: $foreground;
        & > .fleet-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .fleet-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .fleet-table--header {
                background-tint: $foreground 5%;
            }
            & > .fleet-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
    }
    """

    @dataclass
    class RowSelected(Message):
        """Enter was pressed or the cursor row clicked: open the row `key`."""

        table: FleetTable
        key: str

        @property
        def control(self) -> FleetTable:
            return self.table

    @dataclass
    class HeaderSelected(Message):
        """A column's header was clicked."""

        table: FleetTable
        column: int

        @property
        def control(self) -> FleetTable:
            return self.table

    def __init__(
        self,
        labels: Sequence[Text],
        cells: Callable[[str], Sequence[Text]],
        *,
        floors: Sequence[int | None] | None = None,
        first: Collection[int] = (),
        extras: Collection[int] = (),
        id: str | None = None,
    ) -> None:
        """`floors`: per column, the narrowest it may be cut to; `first`: the columns cut
        before the others (`fit_widths`); `extras`: columns shown only where there is room
        (`with_extras`). The first column (the host) stays put when the rest scroll."""
        super().__init__(id=id)
        self._labels = list(labels)
        self._floors = list(floors) if floors is not None else [None] * len(self._labels)
        self._first = frozenset(first)
        self._extras = frozenset(extras)
        self._get_cells = cells
        self._order: list[str] = []  # row keys in display order
        self._index: dict[str, int] = {}  # row key -> display index
        self._row_widths: dict[str, tuple[int, ...]] = {}
        self._width_counts = [Counter({label.cell_len: 1}) for label in self._labels]
        self._widths = [label.cell_len for label in self._labels]
        self._shown: list[int | None] = list(self._widths)  # as fitted; None: hidden
        self._drawn: dict[str, Strip] = {}  # row key -> its whole line, unstyled by cursor
        self._header: Strip | None = None
        self._cursor = 0
        self._styles = (Style(), Style(), Style())  # base, header, cursor: set each paint

    # -- rows -------------------------------------------------------------------------

    def set_row(self, key: str, widths: Sequence[int]) -> None:
        """Add the row `key` at the end, or mark it changed; `widths` are its cells' widths."""
        self.set_rows([(key, widths)])

    def set_rows(self, rows: Iterable[tuple[str, Sequence[int]]]) -> None:
        """`set_row` for many rows, laying the table out once (and taking each column's
        widest cell once, not once a row: 1000 new rows are ~2 ms)."""
        fresh: list[tuple[int, ...]] = []  # the widths of the rows added
        redraw: list[int] = []
        counted: set[int] = set()  # columns whose width counts changed
        for key, widths in dict(rows).items():  # a key given twice: its last widths
            old = self._row_widths.get(key)
            new = self._row_widths[key] = tuple(widths)
            self._drawn.pop(key, None)
            if old is None:
                self._index[key] = len(self._order)
                self._order.append(key)
                fresh.append(new)
            else:
                redraw.append(self._index[key])
                if old != new:
                    self._count_widths(old, new, counted)
        for column, widths in enumerate(zip(*fresh, strict=True)):
            self._width_counts[column].update(widths)
            counted.add(column)
        moved = False
        for column in counted:
            widest = max(self._width_counts[column])  # a few dozen distinct widths at most
            if widest != self._widths[column]:
                self._widths[column] = widest
                moved = True
        if moved:
            self._relayout()
            return
        if fresh:
            self._resize()
        for row in redraw:
            self._refresh_row(row)

    def _count_widths(self, old: tuple[int, ...], new: tuple[int, ...], counted: set[int]) -> None:
        """Move a row's cell widths in the per-column counts; note the columns it moved."""
        for column, (was, width) in enumerate(zip(old, new, strict=True)):
            if was == width:
                continue
            counts = self._width_counts[column]
            counts[was] -= 1
            if not counts[was]:
                del counts[was]
            counts[width] += 1
            counted.add(column)

    def refresh_rows(self, keys: Iterable[str] | None = None) -> None:
        """Forget the drawn lines of `keys` (every row with None): their cells changed."""
        if keys is None:
            self._drawn.clear()
            self.refresh()
            return
        for key in keys:
            self._drawn.pop(key, None)
            if key in self._index:
                self._refresh_row(self._index[key])

    def sort(self, key: Callable[[str], Any]) -> None:
        """Order the rows by `key(row key)`; the cursor stays on the row it was on."""
        current = self.cursor_key
        self._order.sort(key=key)
        self._index = {k: i for i, k in enumerate(self._order)}
        if current is not None:
            self._cursor = self._index[current]
        self._scroll_to_cursor()
        self.refresh()

    @property
    def rows(self) -> list[str]:
        """Row keys in display order."""
        return list(self._order)

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def column_widths(self) -> list[int]:
        """Each column's width without padding: its widest cell or label."""
        return list(self._widths)

    @property
    def shown_widths(self) -> list[int | None]:
        """Each column's width as drawn: `column_widths` fitted to the screen."""
        return list(self._shown)

    # -- cursor -----------------------------------------------------------------------

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @cursor_row.setter
    def cursor_row(self, row: int) -> None:
        row = max(0, min(row, len(self._order) - 1))
        if row == self._cursor:
            return
        self._refresh_row(self._cursor)
        self._cursor = row
        self._refresh_row(row)
        self._scroll_to_cursor()

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor; None when there are no rows."""
        return self._order[self._cursor] if self._order else None

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)  # less the header

    def action_cursor_up(self) -> None:
        self.cursor_row -= 1

    def action_cursor_down(self) -> None:
        self.cursor_row += 1

    def action_page_up(self) -> None:
        self.cursor_row -= self._page()

    def action_page_down(self) -> None:
        self.cursor_row += self._page()

    def action_first(self) -> None:
        self.cursor_row = 0

    def action_last(self) -> None:
        self.cursor_row = len(self._order) - 1

    def _scroll_to_cursor(self) -> None:
        """Scroll the least that shows the cursor row below the header."""
        top = round(self.scroll_y)
        page = self._page()
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False)
        elif self._cursor >= top + page:
            self.scroll_to(y=self._cursor - page + 1, animate=False)

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        event.stop()
        if offset.y == 0:
            frozen = GAP + (self._shown[0] or 0)
            x = offset.x + (round(self.scroll_x) if offset.x >= frozen else 0)
            for column, width in enumerate(self._shown):
                if width is None:
                    continue
                x -= width + GAP
                if x < 0:
                    self.post_message(self.HeaderSelected(self, column))
                    return
            return
        row = offset.y - 1 + round(self.scroll_y)
        if row >= len(self._order):
            return
        if row == self._cursor:  # as DataTable: the first click moves, a second one opens
            self.post_message(self.RowSelected(self, self._order[row]))
        else:
            self.cursor_row = row

    # -- drawing ----------------------------------------------------------------------

    def _room(self) -> int:
        """The cells a line has: the width, less the vertical scrollbar once rows overflow
        (asked before the layout that would show it)."""
        width, height = self.content_size
        overflow = len(self._order) + 1 > height
        return width - (self.styles.scrollbar_size_vertical if overflow else 0)

    def _resize(self) -> None:
        shown = with_extras(self._widths, self._floors, self._room(), self._first, self._extras)
        if shown != self._shown:
            self._shown = shown
            self._drawn.clear()
            self._header = None
            self.refresh()
        width = sum(w + GAP for w in shown if w is not None)
        self.virtual_size = Size(width, len(self._order) + 1)  # + the header

    def _relayout(self) -> None:
        """A column's width changed: every drawn line is stale."""
        self._drawn.clear()
        self._header = None
        self._resize()
        self.refresh()

    def on_resize(self) -> None:
        self._resize()

    def _refresh_row(self, row: int) -> None:
        top = round(self.scroll_y)
        if top <= row < top + self._page():
            self.refresh_line(row + 1)

    def _line(self, cells: Sequence[Text]) -> Strip:
        line = Text(no_wrap=True, end="")
        for text, width in zip(cells, self._shown, strict=False):
            if width is None:
                continue  # an extra column there is no room for
            if text.cell_len > width:  # never wider than its column, whatever it was told
                text = text.copy()
                text.truncate(max(width - 1, 0))
                text.append("…"[:width], style="dim")
            line.append(" " * GAP)
            line.append_text(text)
            line.append(" " * (width - text.cell_len))
        return Strip(line.render(self.app.console), line.cell_len)

    def render_lines(self, crop: Region) -> list[Strip]:
        # Component styles are looked up once a paint, not once a line.
        base = self.rich_style
        self._styles = (
            base,
            base + self.get_component_rich_style("fleet-table--header"),
            base + self.get_component_rich_style("fleet-table--cursor"),
        )
        return super().render_lines(crop)

    def _torn(self, cut: int) -> int:
        """Cells left of a column whose start scrolled out of view at `cut` (its tail, "3"
        of "13.0"): drawn blank, so what shows of a column is all of it or nothing."""
        pos = 0
        for width in self._shown:
            if width is None:
                continue
            pos += GAP
            if pos < cut < pos + width:
                return pos + width - cut
            pos += width
        return 0

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base, header, cursor = self._styles
        if y == 0:
            if self._header is None:
                self._header = self._line(self._labels)
            line, style = self._header, header
        else:
            row = y - 1 + round(self.scroll_y)
            if row >= len(self._order):
                return Strip.blank(width, base)
            key = self._order[row]
            drawn = self._drawn.get(key)
            if drawn is None:
                drawn = self._drawn[key] = self._line(self._get_cells(key))
            line = drawn
            style = cursor if row == self._cursor else base
        start = round(self.scroll_x)
        if start:  # the host column stays; the others scroll under it, a gap between
            frozen = GAP + (self._shown[0] or 0)
            cut = frozen + GAP + start
            torn = self._torn(cut)  # a column cut in two: blank, not a stray fragment
            line = Strip.join(
                [
                    line.crop(0, frozen),
                    Strip.blank(GAP + torn),
                    line.crop(cut + torn, start + width),
                ]
            )
        elif line.cell_length > width:
            line = line.crop(0, width)
        segments = list(Segment.apply_style(line, style))
        if line.cell_length < width:
            segments.append(Segment(" " * (width - line.cell_length), style))
        return Strip(segments, width)
