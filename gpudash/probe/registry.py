"""The probe's sections, in display order, each a module with NAME, TIMEOUT, BODY and parse."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from gpudash.probe.parts import Part

SECTION_NAMES = ("system", "gpus", "topology", "toolkit", "env", "models", "network")


@dataclass(frozen=True)
class Section:
    name: str
    timeout: float
    body: str
    parse: Callable[[Mapping[str, Part]], Any]


@cache
def section(name: str) -> Section:
    module = importlib.import_module(f"gpudash.probe.sections.{name}")
    return Section(module.NAME, float(module.TIMEOUT), module.BODY, module.parse)


def sections_loaded() -> bool:
    """Whether every section's module is imported (then `all_sections` costs nothing)."""
    return section.cache_info().currsize >= len(SECTION_NAMES)


def all_sections() -> tuple[Section, ...]:
    return tuple(section(name) for name in SECTION_NAMES)
