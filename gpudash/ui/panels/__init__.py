"""One module per panel of the host view; each renders one section of a `HostResult`.

A section's panel is found by the section's name, as the probe finds the section itself
(`gpudash.probe.registry`): the module `gpudash.ui.panels.NAME` holds the `Panel` whose
SECTION is NAME. The host view shows the findings, then one panel per registered section in
the registry's order, so a new section's panel needs no list of its own anywhere.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from gpudash.probe.registry import SECTION_NAMES

if TYPE_CHECKING:
    from gpudash.ui.panels.base import Panel

IN_HEADER = frozenset({"system"})
"""Sections the host view shows in its header line (`widgets/system_line`), not in a panel."""


def panel_for(section: str) -> type[Panel]:
    """The panel class of `section`: the Panel in `gpudash.ui.panels.<section>` drawing it.

    Raises LookupError when there is none; the unit test over every registered section makes
    that a failing test rather than a crash on screen."""
    from gpudash.ui.panels.base import Panel

    name = f"gpudash.ui.panels.{section}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise  # the panel's module exists but imports something missing: a real bug
        raise LookupError(f"{section} section: no panel module {name}") from None
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Panel) and section == value.SECTION:
            return value
    raise LookupError(f"{section} section: {name} has no Panel with SECTION = {section!r}")


def section_panels() -> tuple[type[Panel], ...]:
    """Every registered section's panel, in the registry's order (the header's excepted)."""
    return tuple(panel_for(name) for name in SECTION_NAMES if name not in IN_HEADER)
