"""Model values as `rich.text.Text`: the only way remote strings reach a widget.

A `str` handed to `Static` or a `DataTable` cell is parsed as markup; a `Text` never is.
Remote strings are cleaned again here (the parsers already did) so that a control
character that slipped through shows as `^[`, never as an escape sequence.
"""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text

from gpudash.text import clean_line

NA = "–"
"""Shown for a value the host did not report (not the same as zero)."""


def remote(value: Any, style: str = "") -> Text:
    """A value that came from a host, shown literally."""
    if value is None:
        return Text(NA, style="dim")
    return Text(clean_line(str(value)), style=style)


def dim(value: str) -> Text:
    return Text(value, style="dim")


def num(value: float | int | None, unit: str = "", digits: int = 0) -> Text:
    if value is None:
        return Text(NA, style="dim")
    return Text(f"{value:.{digits}f}{unit}")


def gib(mib: float | None) -> str:
    return NA if mib is None else f"{mib / 1024:.0f}"


def flag(value: bool | None, on: str = "on", off: str = "off") -> Text:
    if value is None:
        return Text(NA, style="dim")
    return Text(on if value else off, style="" if value else "dim")


def join(*parts: Text | str, sep: str = " · ") -> Text:
    out = Text()
    first = True
    for part in parts:
        if not part:
            continue
        if not first:
            out.append(sep, style="dim")
        out.append(part if isinstance(part, Text) else Text(part))
        first = False
    return out


# Link classes of `nvidia-smi topo -m`, best to worst, with the style each is drawn in.
LINK_STYLES: dict[str, str] = {
    "NV": "bold green",
    "PIX": "cyan",
    "PXB": "cyan",
    "PHB": "yellow",
    "NODE": "yellow",
    "SYS": "red",
    "X": "dim",
}
LEGEND: tuple[tuple[str, str], ...] = (
    ("NV#", "NVLink"),
    ("PIX/PXB", "switch"),
    ("PHB/NODE", "host bridge"),
    ("SYS", "cross-socket"),
)


def link_class(token: str) -> str:
    return "NV" if re.fullmatch(r"NV\d+", token) else token


def link(token: str) -> Text:
    """One matrix cell, coloured by its link class."""
    return Text(clean_line(token), style=LINK_STYLES.get(link_class(token), ""))


def legend() -> Text:
    out = Text()
    for i, (token, words) in enumerate(LEGEND):
        if i:
            out.append("  ")
        key = "NV" if token == "NV#" else token.split("/")[0]
        out.append(token, style=LINK_STYLES[key])
        out.append(f" {words}", style="dim")
    return out
