"""One readable line per section: what `gpudash probe` prints and the fleet view abbreviates.

Pure functions of parsed results; they never see raw remote text (parsers cleaned it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpudash.model import SectionResult


def section_line(result: SectionResult) -> str:
    if result.data is None:
        return f"error: {result.error}" if result.error else "no data"
    line = _LINES.get(result.name, _generic)(result.data)
    return f"{line}  [{result.error}]" if result.error else line


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


def gpus_line(data: Any) -> str:
    if data.missing:
        return data.missing
    if not data.gpus:
        return "no GPUs reported"
    groups: dict[str, int] = {}
    for g in data.gpus:
        groups[g.name] = groups.get(g.name, 0) + 1
    first = data.gpus[0]
    cc = f"cc {first.cc} {first.sm} {first.arch}" if first.cc else "cc ?"
    if first.cc_source == "name":
        cc += " (from name)"
    names = ", ".join(f"{n}× {name}" for name, n in groups.items())
    bits = [names, cc, gib(first.memory_total_mib)]
    bits.append(f"driver {data.driver_version or '?'} CUDA {data.cuda_version or '?'}")
    broken = [str(g.index) for g in data.gpus if g.error]
    if broken:
        bits.append(f"ERR! on GPU {','.join(broken)}")
    return " · ".join(bits)


def topology_line(data: Any) -> str:
    if data.missing:
        return data.missing
    line = data.summary
    if data.inactive_links:
        line += f" · {data.inactive_links} NVLink links inactive"
    return line


def _generic(data: Any) -> str:
    return type(data).__name__


_LINES: dict[str, Callable[[Any], str]] = {
    "gpus": gpus_line,
    "topology": topology_line,
}
