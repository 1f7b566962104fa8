"""The probe's sections, in display order: the one place a section is registered.

A section is a module `gpudash.probe.sections.NAME` with NAME, TIMEOUT, BODY (its shell code),
`parse` (its parts -> its dataclass) and `summary` (its dataclass -> the line `gpudash probe`
prints). `SECTION_NAMES` is the only list of them: the probe script, the checks' `Context`,
the host view's panels (`gpudash.ui.panels.section_panels`), the summary lines and the tests
all read it, so adding a section is its module, its panel, its tests and its checks.

Modules are imported on first use, not here: `gpudash` starts without paying for parsers it
may not need yet (see `host_probe._plan`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

from gpudash.probe.parts import Part

SECTION_NAMES = (
    "system", "gpus", "topology", "toolkit", "env", "models", "network", "health", "verify",
    "serve",
)  # fmt: skip

D = TypeVar("D")


@dataclass(frozen=True)
class Section(Generic[D]):
    """One section as the probe, the parser and the summary line need it."""

    name: str
    timeout: float
    body: str
    parse: Callable[[Mapping[str, Part]], D]
    summary: Callable[[D], str]


@cache
def section(name: str) -> Section[Any]:
    module = importlib.import_module(f"gpudash.probe.sections.{name}")
    return Section(module.NAME, float(module.TIMEOUT), module.BODY, module.parse, module.summary)


def sections_loaded() -> bool:
    """Whether every section's module is imported (then `all_sections` costs nothing)."""
    return section.cache_info().currsize >= len(SECTION_NAMES)


def all_sections() -> tuple[Section[Any], ...]:
    return tuple(section(name) for name in SECTION_NAMES)
