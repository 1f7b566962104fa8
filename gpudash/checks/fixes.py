"""Which app key runs which fixing task: read from the task table, in one place.

Findings name a task (`fix_task = "torch"`); the key comes from the config's task specs
(`[tasks.torch] key = "t"`, built-ins in gpudash/tasks/builtin.toml), so a user who remaps a
task's key sees the new key in every finding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The tasks findings may name (all built-ins of gpudash/tasks/builtin.toml).
FIX_TASKS = ("uv", "venv", "torch", "serving", "model")


def task_keys(tasks: Mapping[str, Any] | None) -> dict[str | None, str | None]:
    """task name -> its key, from `tasks` (Config.tasks: TaskSpec by name).

    A mapping that can name its keys without building its specs (`keys_by_task`: the
    built-ins, unchecked until used) is asked for them; an empty one (a config made without
    tasks, e.g. for --replay) stands for the built-ins."""
    keys_by_task = getattr(tasks, "keys_by_task", None)
    if keys_by_task is not None:
        return dict(keys_by_task())
    if not tasks:
        from gpudash.config.document import builtin_task_keys

        return dict(builtin_task_keys())
    return {name: getattr(spec, "key", None) for name, spec in tasks.items()}
