"""The built-in task tables as written in builtin.toml, unchecked.

Apart from `spec` (which checks them) because the findings need only each task's key,
and importing the spec checker's module costs start-up ~15 ms on a 2-vCPU VM, paid on the
way to the first findings the app shows."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUILTIN_TOML = Path(__file__).with_name("builtin.toml")


def builtin_tables() -> dict[str, dict[str, object]]:
    return tomllib.loads(BUILTIN_TOML.read_text(encoding="utf-8"))["tasks"]
