"""What a task run says as it goes: the events `gpudash.tasks.runner` and the copy task yield,
the CLI prints and the app folds into its runs. Frozen, so a consumer can keep one.

Per task and host: TaskQueued, then either an end at once (TaskSkipped: its check said done or
it does not apply; TaskBlocked: a need failed or no script could be made; TaskCancelled;
TaskLost) or TaskStarted, any number of TaskOutput, and one end (TaskFinished, TaskCancelled,
TaskLost, or TaskDetached: only where the caller asked that an attached run never be
cancelled). `is_end` tells the ends apart; `succeeded` says which count for `needs` and the
exit code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskQueued:
    host: str
    task: str


@dataclass(frozen=True)
class TaskSkipped:
    """Nothing ran: the check said it is already done, or the task does not apply."""

    host: str
    task: str
    reason: str


@dataclass(frozen=True)
class TaskBlocked:
    """Not started: a need did not succeed, or the script could not be made for this host."""

    host: str
    task: str
    reason: str


@dataclass(frozen=True)
class TaskStarted:
    """`attached`: the task was already running on the host (a second launch attaches)."""

    host: str
    task: str
    run: str | None
    attached: bool
    log_path: str
    started: float  # time.time()


@dataclass(frozen=True)
class TaskOutput:
    """Finished lines (progress redraws collapsed), the unfinished line's current state, and
    the byte offset in the host's log after this chunk."""

    host: str
    task: str
    lines: tuple[str, ...]
    partial: str
    offset: int


@dataclass(frozen=True)
class TaskFinished:
    """The job's exit code. `affects`: the probe sections the run changed, the spec's own
    (`TaskSpec.affects`, from its kind), for the app to re-probe; empty when not known (a
    script task, or a job found running after a restart): then every section is re-probed."""

    host: str
    task: str
    rc: int
    elapsed_s: float
    timed_out: bool = False
    affects: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.rc == 0


@dataclass(frozen=True)
class TaskCancelled:
    host: str
    task: str
    elapsed_s: float


@dataclass(frozen=True)
class TaskLost:
    host: str
    task: str
    reason: str


@dataclass(frozen=True)
class TaskNotConnected(TaskLost):
    """The host could not be reached: nothing ran. A `TaskLost` to every consumer that only
    needs "ended, not succeeded"; the faces say "failed: cannot connect", not "lost" (a run
    that never started was not lost)."""

    @property
    def cause(self) -> str:
        """The reason without the "HOST: " the transport puts first (the line names it)."""
        head = f"{self.host}: "
        return self.reason[len(head) :] if self.reason.startswith(head) else self.reason


@dataclass(frozen=True)
class TaskDetached:
    """The command stopped following a run it had only attached to; the job goes on on the
    host (`gpudash run` on ctrl+c: attaching never cancels what someone else started)."""

    host: str
    task: str
    run: str | None


TaskEvent = (
    TaskQueued
    | TaskSkipped
    | TaskBlocked
    | TaskStarted
    | TaskOutput
    | TaskFinished
    | TaskCancelled
    | TaskLost
    | TaskDetached
)


TaskEnd = TaskSkipped | TaskBlocked | TaskFinished | TaskCancelled | TaskLost | TaskDetached
"""The events that end a task's stream on a host (exactly one per task and host)."""


def succeeded(event: TaskEvent) -> bool:
    """The end events that count as success (for `needs` and the exit code)."""
    return isinstance(event, TaskSkipped) or (isinstance(event, TaskFinished) and event.ok)


def is_end(event: TaskEvent) -> bool:
    """Whether `event` is a `TaskEnd`."""
    ends = (TaskSkipped, TaskBlocked, TaskFinished, TaskCancelled, TaskLost, TaskDetached)
    return isinstance(event, ends)
