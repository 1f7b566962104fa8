"""How old the data on screen is: "probed 12 s ago", and whether it will be renewed.

A dashboard that stopped refreshing looks exactly like one that did not; the age says which
(k9s and htop users read staleness off the screen, not from memory of when they pressed r).
The app records when each host's round ended (`GpudashApp.probed_at`, on its own clock so
tests and snapshots can pin it); these functions only word it.
"""

from __future__ import annotations

from collections.abc import Iterable


def age(seconds: float) -> str:
    """'3 s', '4 min', '2 h', '3 d': one unit, rounded down, as `ls -l` readers expect."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h"
    return f"{s // 86400} d"


def probed_words(probed_at: float | None, now: float) -> str:
    return "not probed yet" if probed_at is None else f"probed {age(now - probed_at)} ago"


def refresh_words(refresh_s: float) -> str:
    return "refresh off" if refresh_s <= 0 else f"refresh every {age(refresh_s)}"


def fleet_words(probed: Iterable[float], now: float, hosts: int) -> str:
    """'probed 2 s – 4 min ago' over the hosts that have been probed (the newest and the
    oldest), with how many have not been yet."""
    ages = sorted(now - t for t in probed)
    if not ages:
        return "not probed yet"
    newest, oldest = age(ages[0]), age(ages[-1])
    words = f"probed {newest} ago" if newest == oldest else f"probed {newest} – {oldest} ago"
    missing = hosts - len(ages)
    return words + (f" ({missing} not yet)" if missing > 0 else "")
