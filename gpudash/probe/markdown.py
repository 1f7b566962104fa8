"""What a section's part of the Markdown report is written with (`gpudash report HOST`).

Each section renders its own part (`report` in its module, `Section.report` in the
registry), so a new section cannot drop out of the report; `gpudash.report` puts the parts
together. Every string that came from the host is untrusted: `md()` cleans it
(`gpudash.text.clean_line`: control, bidi and zero-width characters shown, not acted on) and
escapes what Markdown would act on (table pipes, backticks, emphasis, links, HTML), so a
hostile name can neither break a table nor inject markup into the ticket.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from gpudash.text import clean_line

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def md(value: object) -> str:
    """Remote text as literal Markdown on one line: `?` for None."""
    if value is None:
        return "?"
    text = clean_line(str(value))
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table; header cells are ours, row cells are escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(md(c) if c != "" else " " for c in row) + " |")
    return lines


def mib(value: int | None) -> str:
    return "?" if value is None else f"{value / 1024:.1f} GiB"


def yes(flag: bool | None, on: str = "on", off: str = "off") -> str:
    return "?" if flag is None else on if flag else off
