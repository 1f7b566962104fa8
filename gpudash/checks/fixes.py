"""Which app key runs which fixing task: read from the task table, in one place.

Findings name a task (`fix_task = "torch"`); the key comes from the config's task specs
(`[tasks.torch] key = "t"`, built-ins in gpudash/tasks/builtin.toml), so a user who remaps a
task's key sees the new key in every finding.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

# The tasks findings may name (all built-ins of gpudash/tasks/builtin.toml).
FIX_TASKS = ("uv", "venv", "torch", "serving", "model")


@cache
def _builtin_keys() -> dict[str, str | None]:
    from gpudash.tasks.builtin import builtin_tables

    return {name: table.get("key") for name, table in builtin_tables().items()}


def task_keys(tasks: Mapping[str, Any] | None) -> dict[str | None, str | None]:
    """task name -> its key, from `tasks` (Config.tasks: TaskSpec by name) or, when that is
    empty (a config made without tasks, e.g. for --replay) or the built-ins as they are
    (`BuiltinTasks`, not checked yet: checking them costs more than reading their keys),
    the built-in tables' keys."""
    from gpudash.config_hosts import BuiltinTasks

    if isinstance(tasks, BuiltinTasks) or not tasks:
        return dict(_builtin_keys())
    return {name: getattr(spec, "key", None) for name, spec in tasks.items()}
