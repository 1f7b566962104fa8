"""The one message that carries the core's events into the app."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from gpudash.model import Event

if TYPE_CHECKING:
    from gpudash.tasks import events as ev  # not imported at start-up: only annotations
    from gpudash.ui.task_runs import EarlierRun


class ProbeEvent(Message):
    """The core reported something about a host (state, a section, the end of a probe)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class TaskEvent(Message):
    """The core reported something about a task run (queued, a log chunk, its end...)."""

    def __init__(self, event: ev.TaskEvent | EarlierRun) -> None:
        super().__init__()
        self.event = event
