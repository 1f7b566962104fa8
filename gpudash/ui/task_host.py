"""What `TaskControl` (gpudash/ui/task_control.py) sees of the app: a Protocol the app
satisfies, so the task side never names the App class (and the app module is not imported
by it)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.message import Message
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.worker import Worker

    from gpudash.config.model import Config
    from gpudash.fleet import Fleet
    from gpudash.model import HostResult
    from gpudash.ui.widgets.host_list import HostList

Reprobe = Callable[[str, "tuple[str, ...] | None"], None]
"""Probe what a task changed on a host (`ProbeRouter.reprobe`)."""


class TaskHost(Protocol):
    """What `TaskControl` needs from the app, and nothing more: the hosts
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
        """Marked hosts; `TaskControl.mark` changes the set in place."""
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
