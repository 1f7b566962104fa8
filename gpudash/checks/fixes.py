"""Which app key runs which fixing task: read from the task table, in one place.

Findings name a task (`fix_task = "torch"`); the key comes from the config's task specs
(`[tasks.torch] key = "t"`, built-ins in gpudash/tasks/builtin.toml), so a user who remaps a
task's key sees the new key in every finding. `fix_phrase` is how a headless face names
them, so `gpudash check` and `gpudash report` say it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal


def task_keys(tasks: Mapping[str, Any] | None) -> dict[str, str | None]:
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


def fix_phrase(
    task: str | None, key: str | None, form: Literal["text", "markdown"] = "text"
) -> str:
    """The fixing task (and its app key, when it has one) in the words of one face:

        text      "[task torch (key t)]"      `gpudash check`
        markdown  "(task `torch`, key `t`)"   `gpudash report`

    "" when no task fixes the finding. (The findings panel says "press t to run task torch"
    with the key styled, from the same two fields.)"""
    if not task:
        return ""
    if form == "markdown":
        return f"(task `{task}`" + (f", key `{key}`)" if key else ")")
    return f"[task {task}" + (f" (key {key})]" if key else "]")
