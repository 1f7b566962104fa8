"""The probe's sections, in display order: the one place a section is registered.

A section is a module `gpudash.probe.sections.NAME` with NAME, TIMEOUT, BODY (its shell code),
`parse` (its parts -> its dataclass), `summary` (its dataclass -> the line `gpudash probe`
prints), TITLE and `report` (its part of the Markdown report) and, where its parts run GPU
tools, GPU_TOOLS (part -> the command, what a hung part is named by).
`SECTION_NAMES` is the only list of them: the probe script, the checks' `Context`,
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
from typing import Any, Generic, TypeAlias, TypeVar

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
    title: str
    """Its heading in the Markdown report."""
    report: Callable[[D], list[str]]
    """Its part of the Markdown report (`gpudash report HOST`), under `title`."""
    tools: Mapping[str, str]
    """The GPU tool each of its parts runs, by part name: what a hang is named by."""


AnySection: TypeAlias = "Section[Any]"
"""A section of the registry, whose data type only its own module knows: the one `Any` that
crosses a package boundary, on purpose. Callers hand what `parse` returned to the same
section's `summary` and `report` without looking into it (the section modules' own
signatures are checked, and test_registry ties each panel's `Panel[T]` to `parse`)."""


_REQUIRED = ("NAME", "TIMEOUT", "BODY", "parse", "summary", "TITLE", "report")


@cache
def section(name: str) -> AnySection:
    """The registered section NAME; a module that lacks part of what a section is (its report
    part, say) is named here, so it cannot drop out of the report or the probe silently."""
    module = importlib.import_module(f"gpudash.probe.sections.{name}")
    missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
    if missing:
        raise LookupError(f"section {name}: its module has no {', '.join(missing)}")
    return Section(
        module.NAME,
        float(module.TIMEOUT),
        module.BODY,
        module.parse,
        module.summary,
        module.TITLE,
        module.report,
        getattr(module, "GPU_TOOLS", {}),
    )


def sections_loaded() -> bool:
    """Whether every section's module is imported (then `all_sections` costs nothing)."""
    return section.cache_info().currsize >= len(SECTION_NAMES)


def all_sections() -> tuple[AnySection, ...]:
    return tuple(section(name) for name in SECTION_NAMES)
