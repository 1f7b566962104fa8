"""A table for the panels that costs what its text costs.

Rich's `Table` renders every cell as a renderable of its own (padding, measurement, line
splitting) and is measured once more for the panel's height: the five tables of an 8-GPU
host were ~15 % of building the first screen. The panels' tables are plain: a space between
columns, no box, a header line at most. `Grid` lays them out from the cells' widths and,
when the panel is too narrow, shrinks the columns marked to give way (`give`): cropped with
an ellipsis, or wrapped under themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

Justify = Literal["left", "center", "right"]


@dataclass(frozen=True)
class Column:
    header: Text | str = ""
    justify: Justify = "left"
    style: str = ""
    give: Literal["ellipsis", "wrap"] | None = None
    """How the column gives way when the grid is too wide; None: never."""
    min_width: int = 1
    """The narrowest a giving column gets."""


class Grid:
    def __init__(self, *columns: Column, show_header: bool = True) -> None:
        self.columns = columns
        self.show_header = show_header
        self.rows: list[list[Text]] = []

    def add_row(self, *cells: Text | str) -> None:
        row = [c if isinstance(c, Text) else Text(c) for c in cells]
        row.extend(Text() for _ in range(len(self.columns) - len(row)))
        for cell, column in zip(row, self.columns, strict=True):
            if column.style:
                cell.stylize_before(column.style)
        self.rows.append(row)

    def _lines(self) -> list[list[Text]]:
        if not self.show_header:
            return self.rows
        header = [c.header if isinstance(c.header, Text) else Text(c.header) for c in self.columns]
        return [header, *self.rows]

    def _natural(self) -> list[int]:
        widths = [0] * len(self.columns)
        for row in self._lines():
            for i, cell in enumerate(row):
                widths[i] = max(widths[i], cell.cell_len)
        return widths

    def widths(self, max_width: int) -> list[int]:
        """Natural widths, the giving columns shrunk (the rightmost first) to fit."""
        widths = self._natural()
        over = sum(widths) + len(widths) - 1 - max_width
        for i in reversed(range(len(widths))):
            if over <= 0:
                break
            column = self.columns[i]
            if column.give is None:
                continue
            cut = min(over, max(0, widths[i] - column.min_width))
            widths[i] -= cut
            over -= cut
        return widths

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        natural = self._natural()
        least = [
            min(w, c.min_width) if c.give else w for w, c in zip(natural, self.columns, strict=True)
        ]
        gaps = len(natural) - 1
        # Not clamped to the width offered, as Rich's Table is not: a panel that sizes the
        # grid to its content (the topology matrix) then scrolls it sideways.
        return Measurement(sum(least) + gaps, sum(natural) + gaps)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        widths = self.widths(options.max_width)
        for row in self._lines():
            for line in self._row_lines(console, row, widths):
                yield from line.render(console)
                yield Segment.line()

    def _row_lines(
        self, console: Console, row: Sequence[Text], widths: list[int]
    ) -> Iterable[Text]:
        cells: list[list[Text]] = []
        for cell, width, column in zip(row, widths, self.columns, strict=True):
            if cell.cell_len <= width:
                cells.append([cell])
            elif column.give == "wrap":
                cells.append(list(cell.wrap(console, width, overflow="fold")))
            else:
                cut = cell.copy()
                cut.truncate(width, overflow="ellipsis")
                cells.append([cut])
        for n in range(max(len(c) for c in cells)):
            line = Text(end="", no_wrap=True)
            for i, (parts, width, column) in enumerate(
                zip(cells, widths, self.columns, strict=True)
            ):
                if i:
                    line.append(" ")
                part = parts[n].copy() if n < len(parts) else Text()
                part.rstrip_end(width)
                part.align(column.justify, width)
                line.append_text(part)
            yield line
