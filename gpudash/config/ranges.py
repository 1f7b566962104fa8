"""Host ranges: `[hosts."b300-[01-16]"]` is sixteen hosts b300-01 .. b300-16 with the same
settings, as pdsh/ClusterShell and Slurm write node lists (one numeric range per name).

An `address` holding a range of the same length expands alongside (`10.0.0.[11-26]`: the
n-th host gets the n-th address); an address with no range stays as written, and with no
address each host's name is its address (so ~/.ssh/config `Host b300-*` blocks apply, as
`ssh b300-01` would). Zero-padding follows the range's first number (`[01-16]`: 01..16).
"""

from __future__ import annotations

import re

MAX_HOSTS = 4096
"""A range past this is a typo (`[1-100000]`), not a fleet: refused rather than expanded."""

_RANGE = re.compile(r"\[(\d+)-(\d+)\]")


def expand(text: str) -> list[str] | str | None:
    """The names `text`'s one range gives; None when it has no range; a problem (str) when
    the range is backwards, too long, or there is more than one."""
    found = list(_RANGE.finditer(text))
    if not found:
        return None
    if len(found) > 1:
        return "only one [A-B] range per name"
    match = found[0]
    first, last = match.group(1), match.group(2)
    start, end = int(first), int(last)
    if end < start:
        return f"range [{first}-{last}] runs backwards"
    if end - start + 1 > MAX_HOSTS:
        return f"range [{first}-{last}] is {end - start + 1} hosts; at most {MAX_HOSTS}"
    width = len(first) if first.startswith("0") else 0
    head, tail = text[: match.start()], text[match.end() :]
    return [f"{head}{n:0{width}d}{tail}" for n in range(start, end + 1)]
