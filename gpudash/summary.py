"""One readable line per section: what `gpudash probe` prints and the fleet view abbreviates.

Each section's module owns its line (`summary`, read through the registry); this module only
adds the error and the "no data" cases every section shares. Pure functions of parsed
results; they never see raw remote text (parsers cleaned it).
"""

from __future__ import annotations

from gpudash.model import SectionResult
from gpudash.probe.registry import SECTION_NAMES, section
from gpudash.units import duration, gib, human_bytes

__all__ = ["duration", "gib", "human_bytes", "section_line"]


def section_line(result: SectionResult) -> str:
    if result.data is None:
        return f"error: {result.error}" if result.error else "no data"
    if result.name in SECTION_NAMES:
        line = section(result.name).summary(result.data)
    else:  # not a section of this gpudash (a replayed capture from another version)
        line = type(result.data).__name__
    return f"{line}  [{result.error}]" if result.error else line
