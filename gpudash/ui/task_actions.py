"""The app's task keys and handlers: which hosts a task key targets, the tasks screen, marks,
and task events; an object the app composes (`GpudashApp.task_actions`), seeing the app only
through `TaskHost`.

The runs themselves and their workers are `TaskControl`'s (gpudash/ui/task_control.py), made
on first use: importing the task core is not on the first frame's path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from textual.css.query import NoMatches

if TYPE_CHECKING:
    from textual.message import Message
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.worker import Worker

    from gpudash.config.model import Config
    from gpudash.fleet import Fleet
    from gpudash.model import HostResult
    from gpudash.tasks.events import TaskEvent
    from gpudash.ui.task_control import TaskControl
    from gpudash.ui.widgets.host_list import HostList

Reprobe = Callable[[str, "tuple[str, ...] | None"], None]
"""Probe what a task changed on a host (`ProbeRouter.reprobe`)."""


class TaskHost(Protocol):
    """What `TaskActions` and `TaskControl` need from the app, and nothing more: the hosts
    (config, fleet, snapshots, order, selection and marks), its screens, and Textual's
    workers and messages (the App's own methods, so the runs stay the app's)."""

    @property
    def config(self) -> Config: ...
    @property
    def fleet(self) -> Fleet: ...
    @property
    def results(self) -> dict[str, HostResult]: ...
    @property
    def order(self) -> list[str]: ...
    @property
    def selected(self) -> str | None: ...
    @property
    def marked(self) -> set[str]:
        """Marked hosts; `TaskActions.mark` changes the set in place."""
        ...

    @property
    def quitting(self) -> bool: ...
    @property
    def host_list(self) -> HostList: ...
    @property
    def screen(self) -> Screen[object]: ...
    @property
    def screen_stack(self) -> list[Screen[Any]]: ...
    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], None] | None = None
    ) -> Any: ...
    def notify(
        self, message: str, *, severity: SeverityLevel = "information", timeout: float | None = None
    ) -> None: ...
    def run_worker(
        self,
        work: Coroutine[Any, Any, None],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
    ) -> Worker[None]: ...
    def post_message(self, message: Message) -> bool: ...


class TaskActions:
    def __init__(self, host: TaskHost, reprobe: Reprobe) -> None:
        self.host = host
        self._reprobe = reprobe
        self._control: TaskControl | None = None

    @property
    def control(self) -> TaskControl:
        """The runs and their workers (gpudash/ui/task_control.py), made on first use."""
        if self._control is None:
            from gpudash.ui.task_control import TaskControl

            self._control = TaskControl(self.host, self._reprobe)
        return self._control

    def targets(self) -> list[str]:
        """Marked hosts in config order, else the selected host."""
        host = self.host
        if host.marked:
            return [name for name in host.order if name in host.marked]
        return [host.selected] if host.selected else []

    def request(
        self, task: str, params: Mapping[str, str] | None = None, hosts: list[str] | None = None
    ) -> None:
        self.control.request(task, hosts if hosts is not None else self.targets(), params)

    def cancel(self, host: str, task: str) -> None:
        self.control.cancel(host, task)

    def task_for_key(self, key: str) -> str | None:
        """The task whose configured key is `key` (Textual's name for it), if any."""
        for name, spec in self.control.specs.items():
            if spec.key and key in spec.key.split(","):
                return name
        return None

    def toggle_screen(self) -> None:
        """Open the tasks screen, or close it when it is the one on top."""
        from gpudash.ui.screens.tasks import TasksScreen

        if isinstance(self.host.screen, TasksScreen):
            self.host.screen.dismiss(None)
            return
        self.host.push_screen(TasksScreen(self.control.specs, self.control.runs))

    def mark(self) -> None:
        """Mark the selected host, or unmark it."""
        host = self.host
        if host.selected is None:
            return
        host.marked.symmetric_difference_update({host.selected})
        host.host_list.set_marked(host.marked)

    def on_event(self, event: TaskEvent) -> None:
        """Fold one task event (the app's `TaskEvent` handler hands it over) and show it."""
        if self.host.quitting or not self.host.screen_stack:
            return
        run, lines, started = self.control.on_event(event)
        running = {host for (host, _), r in self.control.runs.items() if r.active}
        self.host.host_list.set_running(running)
        from gpudash.ui.screens.tasks import TasksScreen

        for screen in self.host.screen_stack:
            if isinstance(screen, TasksScreen):
                with contextlib.suppress(NoMatches):  # a screen being torn down
                    screen.update_run(run, lines, started)
