"""The app's task keys and handlers, kept beside GpudashApp (a mixin) so app.py stays the
composition: which hosts a task key targets, the tasks screen, marks, and task events.

The runs themselves and their workers are `TaskControl`'s (gpudash/ui/task_control.py).
"""

from __future__ import annotations

import contextlib
from typing import Any

from textual.css.query import NoMatches

from gpudash.ui.messages import TaskEvent


class TaskActions:
    """Mixed into GpudashApp, which provides `order`, `selected`, `marked`, `_tasks`,
    `_quitting`, `screen`, `screen_stack`, `host_list` and `push_screen`."""

    order: list[str]
    selected: str | None
    marked: set[str]
    _tasks: Any
    _quitting: bool

    @property
    def tasks(self) -> Any:
        """The runs and their workers (gpudash/ui/task_control.py), made on first use."""
        if self._tasks is None:
            from gpudash.ui.task_control import TaskControl

            self._tasks = TaskControl(self)
        return self._tasks

    def task_targets(self) -> list[str]:
        """Marked hosts in config order, else the selected host."""
        if self.marked:
            return [name for name in self.order if name in self.marked]
        return [self.selected] if self.selected else []

    def request_task(self, task: str, params: Any = None, hosts: list[str] | None = None) -> None:
        self.tasks.request(task, hosts if hosts is not None else self.task_targets(), params)

    def cancel_run(self, host: str, task: str) -> None:
        self.tasks.cancel(host, task)

    def action_tasks(self) -> None:
        from gpudash.ui.screens.tasks import TasksScreen

        if isinstance(self.screen, TasksScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(TasksScreen(self.tasks.specs, self.tasks.runs))

    def action_mark(self) -> None:
        if self.selected is None:
            return
        self.marked ^= {self.selected}
        self.host_list.set_marked(self.marked)

    def on_task_event(self, message: TaskEvent) -> None:
        if self._quitting or not self.screen_stack:
            return
        run, lines, started = self.tasks.on_event(message.event)
        from gpudash.ui.screens.tasks import TasksScreen

        for screen in self.screen_stack:
            if isinstance(screen, TasksScreen):
                with contextlib.suppress(NoMatches):  # a screen being torn down
                    screen.update_run(run, lines, started)
