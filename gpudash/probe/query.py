"""`nvidia-smi --query-gpu=... --format=csv`: one row per GPU, the cheapest full probe.

Values stay strings as printed (`78.73 W`, `[N/A]`); `number` and friends read them typed, so
that a caller decides what a missing value means. Loop mode (`-l`) repeats rows, and a run cut
short leaves a partial last line, so rows are keyed by GPU index and the latest complete one wins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpudash.text import strip_escapes

_FIELD = re.compile(r"^[A-Za-z_][\w.]*(?:\s*\[[^\]]*\])?$")
# Applied to stripped text, anchored at both ends, no two `\s*` side by side: linear (issue 20).
_NUMBER = re.compile(r"([-+]?\d+(?:\.\d+)?)\s*(?:[A-Za-z%/]+)?")
MISSING = frozenset(
    {
        "",
        "N/A",
        "[N/A]",
        "[Not Supported]",
        "Not Supported",
        "ERR!",
        "[ERR!]",
        "[Unknown Error]",
        "Unknown Error",
        "[GPU is lost]",
        "GPU is lost",
    }
)


@dataclass(frozen=True)
class QueryTable:
    header: tuple[str, ...] = ()
    rows: tuple[dict[str, str], ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"header": list(self.header), "rows": [dict(r) for r in self.rows]}


def field_name(column: str) -> str:
    """`memory.total [MiB]` → `memory.total`."""
    column = column.strip()
    at = column.rfind("[")
    if column.endswith("]") and at >= 0 and "]" not in column[at:-1]:
        column = column[:at]
    return column.strip()


def number(value: str | None) -> float | None:
    """`78.73 W` → 78.73, `143771 MiB` → 143771.0, `0 %` → 0.0; None for N/A markers."""
    if not isinstance(value, str) or value.strip() in MISSING:
        return None
    m = _NUMBER.fullmatch(value.strip())
    return float(m.group(1)) if m else None


def integer(value: str | None) -> int | None:
    n = number(value)
    return None if n is None else int(n)


def text(value: str | None) -> str | None:
    """The value as printed, or None when the tool printed a 'not available' marker."""
    if not isinstance(value, str):
        return None
    v = value.strip()
    return None if v in MISSING else v


def parse_query(text_: str, fields: Sequence[str] | None = None) -> QueryTable:
    """Read CSV from `--query-gpu`; with `fields`, the output was `noheader` and these name the
    columns. Never raises."""
    if not isinstance(text_, str):
        return QueryTable(notes=("no text",))
    lines = strip_escapes(text_).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    notes: list[str] = []
    header: list[str] = [f.strip() for f in fields] if fields else []
    latest: dict[str, dict[str, str]] = {}
    for number_, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if not fields and all(_FIELD.match(c) for c in cells) and not _looks_like_row(cells):
            if header and cells != header:
                latest = {}  # a different query started: its rows replace the old ones
            header = cells
            continue
        if not header:
            notes.append(f"line {number_}: data before any header")
            continue
        if len(cells) != len(header):
            notes.append(f"line {number_}: {len(cells)} cells for {len(header)} columns")
            continue
        row = {field_name(h): v for h, v in zip(header, cells, strict=True)}
        key = row.get("index") or row.get("uuid") or row.get("pci.bus_id") or str(len(latest))
        latest.pop(key, None)
        latest[key] = row
    if not header:
        notes.append("no CSV header")
    rows = sorted(latest.values(), key=_order) if latest else []
    return QueryTable(tuple(header), tuple(rows), tuple(notes))


def _looks_like_row(cells: list[str]) -> bool:
    """`0, 1` or `Enabled, Disabled` also match the field pattern; real headers have a dot, an
    underscore or a unit in at least one name, or are names like `index`/`name`/`uuid`."""
    known = {"index", "name", "uuid", "count", "timestamp", "serial", "vbios_version"}
    return not any("." in c or "_" in c or "[" in c or c in known for c in cells)


def _order(row: dict[str, str]) -> tuple[int, str]:
    index = integer(row.get("index"))
    return (index if index is not None else 1 << 30, "")
