"""Sizes and durations as people read them: what the summary lines, reports and panels share.

A leaf module (it imports nothing of gpudash), so the probe's sections can format their own
summary line without importing anything above them.
"""

from __future__ import annotations


def gib(mib: float | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.0f} GiB"


def human_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit in ("B", "KB") else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes = int(seconds // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    return f"{days}d {hours}h" if days else f"{hours}h {mins}m"
