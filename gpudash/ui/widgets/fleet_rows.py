"""Every host's fleet-view values, kept up to date as probe events arrive, so that opening
the view only reads them.

A column's highlight needs its majority, so opening the fleet view with 1000 hosts computed
all ten values of every host, and measured its cells: 55-95 ms of a 150-200 ms open. The app
hands each new snapshot to `FleetRows.of(app).update` (gpudash/ui/probing.py), and the view
opens on the values, majority counts and cell widths already made. Snapshots are immutable
and replace one another, so a value stays right for as long as what it was computed from
is the same object: a column that reads one section (`Column.section`) is recomputed only
when a snapshot brings a new result of that section, once a round; the others (the name,
the state) at each snapshot, cheaply. A probe event costs a few identity checks and the
columns it touched (~5-10 µs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import ClassVar
from weakref import WeakKeyDictionary

from gpudash.model import HostResult
from gpudash.ui.widgets.fleet_columns import COLUMNS, cell, majority_of

Values = tuple[str | None, ...]
"""A host's value in each of `COLUMNS`, in order."""

_NONE: object = object()  # the source of a value not computed yet


class FleetRows:
    """Per host: its column values and its cells' widths; per column: how many hosts have
    each value (what its majority is taken from). One per app, across fleet-view openings."""

    _of: ClassVar[WeakKeyDictionary[object, FleetRows]] = WeakKeyDictionary()

    MEASURED = 20_000
    """Cell widths kept (host names included); past it they are measured afresh."""

    @classmethod
    def of(cls, app: object) -> FleetRows:
        """The app's rows (made empty on first use; they go with the app)."""
        rows = cls._of.get(app)
        if rows is None:
            rows = cls._of[app] = cls()
        return rows

    def __init__(self) -> None:
        self.values: dict[str, Values] = {}
        self.widths: dict[str, tuple[int, ...]] = {}  # the width of each of a host's cells
        self.counts: list[Counter[str]] = [Counter() for _ in COLUMNS]
        self._seen: dict[str, HostResult] = {}  # host -> the snapshot its values are of
        self._sources: dict[str, list[object]] = {}  # host -> what each value was made from
        self._width_of: dict[tuple[int, str | None], int] = {}  # (column, value) -> width

    def update(self, result: HostResult) -> bool:
        """Take a host's latest snapshot; whether any of its values changed."""
        name = result.name
        if self._seen.get(name) is result:
            return False
        self._seen[name] = result
        sources = self._sources.setdefault(name, [_NONE] * len(COLUMNS))
        old = self.values.get(name)
        new = list(old or (None,) * len(COLUMNS))
        for i, column in enumerate(COLUMNS):
            source = result if column.section is None else result.sections.get(column.section)
            if source is not sources[i]:
                sources[i] = source
                new[i] = column.value(result)
        values = tuple(new)
        if values == old:
            return False
        self._count(old, values)
        self.values[name] = values
        self.widths[name] = self._measure(result, values)
        return True

    def sync(self, results: Mapping[str, HostResult]) -> list[str]:
        """`update` with every host's snapshot (any the app did not hand over yet); the
        hosts whose values changed."""
        return [name for name, result in results.items() if self.update(result)]

    def usual(self) -> list[str | None]:
        """Each column's majority value (None for a column that is not compared)."""
        return [
            majority_of(counts) if column.compare else None
            for column, counts in zip(COLUMNS, self.counts, strict=True)
        ]

    def _count(self, old: Values | None, new: Values) -> None:
        for i, column in enumerate(COLUMNS):
            was = None if old is None else old[i]
            value = new[i]
            if not column.compare or was == value:
                continue
            counts = self.counts[i]
            if was is not None:
                counts[was] -= 1
                if not counts[was]:
                    del counts[was]
            if value is not None:
                counts[value] += 1

    def _measure(self, result: HostResult, values: Iterable[str | None]) -> tuple[int, ...]:
        """A cell is its value, cut (its style aside): each distinct value of a column is
        measured once."""
        widths = []
        for i, value in enumerate(values):
            width = self._width_of.get((i, value))
            if width is None:
                if len(self._width_of) >= self.MEASURED:  # error texts vary round to round
                    self._width_of.clear()
                width = self._width_of[(i, value)] = cell(result, COLUMNS[i], None, value).cell_len
            widths.append(width)
        return tuple(widths)
