"""What the app knows about each task run: its state, times and the tail of its log.

One `Run` per (host, task), folded from the core's task events by `fold`. The log is a ring
buffer (`RING_LINES`): the pane shows the recent past and the full log stays on disk, in the
core's local copy (`Run.log_path`) and in the job directory on the host.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from rich.text import Text

from gpudash.tasks import events as ev

RING_LINES = 5000
"""Lines of a run's log kept in memory; a 200k-line pip log must not grow the app."""


@dataclass
class Run:
    host: str
    task: str
    state: str = "queued"  # queued running ok failed skipped blocked cancelled lost
    detail: str = ""
    rc: int | None = None
    started: float | None = None  # time.monotonic() when it started here
    elapsed_s: float | None = None  # set at the end
    attached: bool = False
    log_path: str = ""
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=RING_LINES))
    partial: str = ""
    received: int = 0  # lines received in all (the ring holds the last RING_LINES)
    cancelling: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.host, self.task)

    @property
    def active(self) -> bool:
        return self.state in ("queued", "running")

    def elapsed(self, now: float | None = None) -> float | None:
        if self.elapsed_s is not None:
            return self.elapsed_s
        if self.started is None:
            return None
        return (now if now is not None else time.monotonic()) - self.started


@dataclass(frozen=True)
class EarlierRun:
    """A run that ended before this app started, found in the host's job dirs after a
    restart: listed again with how it ended (the app's own event, not the core's)."""

    host: str
    task: str
    state: str  # ok failed cancelled lost
    rc: int | None
    run: str | None


def run_began(run_id: str | None) -> float | None:
    """When a run started (time.time()), from its id ('20260103T141502-a1b2c3', local time:
    `gpudash.tasks.jobs.new_run_id`); None when the id says nothing."""
    if not run_id:
        return None
    try:
        return time.mktime(time.strptime(run_id.split("-", 1)[0], "%Y%m%dT%H%M%S"))
    except (ValueError, OverflowError):
        return None


def last_line(run: Run) -> str:
    """The run's last non-blank line of output, cut to a table cell's worth."""
    for line in (run.partial, *reversed(run.lines)):
        if line.strip():
            text = line.strip()
            return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"
    return ""


NOTE_CHARS = 120
"""The longest note the Runs table shows (the log pane has the whole line)."""


def fold(run: Run, event: object) -> None:
    """Apply one core event to `run` (in place: the app owns runs, one handler touches them)."""
    if isinstance(event, ev.TaskQueued):
        run.state, run.detail, run.rc, run.elapsed_s = "queued", "", None, None
    elif isinstance(event, ev.TaskStarted):
        run.state = "running"
        run.started = time.monotonic()
        began = run_began(event.run) if event.attached else None
        if began is not None:  # re-attached: elapsed since the run began, not since attach
            run.started -= max(0.0, time.time() - began)
        run.attached = event.attached
        run.log_path = event.log_path
        run.detail = "attached to the run already going" if event.attached else ""
        run.lines.clear()
        run.partial = ""
        run.received = 0
    elif isinstance(event, ev.TaskOutput):
        run.lines.extend(event.lines)
        run.received += len(event.lines)
        run.partial = event.partial
    elif isinstance(event, ev.TaskSkipped):
        run.state, run.detail = "skipped", event.reason
    elif isinstance(event, ev.TaskBlocked):
        run.state, run.detail = "blocked", event.reason
    elif isinstance(event, ev.TaskFinished):
        run.state = "ok" if event.ok else "failed"
        run.rc, run.elapsed_s = event.rc, event.elapsed_s
        run.detail = "timed out" if event.timed_out else ""
        if not event.ok and not event.timed_out:
            run.detail = last_line(run)  # why it failed, as a rule: in the Runs table's note
    elif isinstance(event, ev.TaskCancelled):
        run.state, run.elapsed_s = "cancelled", event.elapsed_s or run.elapsed()
    elif isinstance(event, ev.TaskNotConnected):  # nothing ran: failed, not lost
        run.state, run.rc, run.detail = "failed", None, f"cannot connect: {event.cause}"
    elif isinstance(event, ev.TaskLost):
        run.state, run.detail = "lost", event.reason
    elif isinstance(event, EarlierRun):
        run.state, run.rc, run.started, run.elapsed_s = event.state, event.rc, None, None
        run.detail = f"earlier run {event.run or ''}: its log is in the job dir on the host"
    if not run.active:
        run.cancelling = False
        if run.elapsed_s is None and run.started is not None:
            run.elapsed_s = run.elapsed()


_STYLES = {
    "queued": "dim",
    "running": "yellow",
    "ok": "green",
    "failed": "bold red",
    "skipped": "cyan",
    "blocked": "red",
    "cancelled": "magenta",
    "lost": "red",
}


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def state_text(run: Run, now: float | None = None) -> Text:
    """'running 12s', 'failed rc=2', 'skipped (already done)', 'ok 3.2s'."""
    word = run.state
    if run.state == "failed" and run.rc is None and run.detail.startswith("cannot connect"):
        word = "failed: cannot connect"
    elif run.state == "failed":
        word = f"failed rc={run.rc}" + (" (timed out)" if run.detail == "timed out" else "")
    elif run.state == "skipped":
        word = "skipped (already done)" if "already done" in run.detail else "skipped"
    elif run.state == "running" and run.cancelling:
        word = "cancelling"
    out = Text(word, style=_STYLES.get(run.state, ""))
    took = duration(run.elapsed(now))
    if took and run.state not in ("queued", "skipped", "blocked"):
        out.append(f" {took}", style="dim")
    return out
