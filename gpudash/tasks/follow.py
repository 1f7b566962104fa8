"""Following a job on the host to its end: its log as task events, then its one end event.

`JobFollower` is the part shared by a new run (`gpudash.tasks.runner.run_task`) and a job found
running after a restart (`follow_job`). The log is streamed from byte offset 0 and re-attached
from the count of bytes received after any drop, so no line is lost or doubled; then the
job directory's status (and rc file) says how it ended. A cancel asked for stops the remote
process group and the stream goes on until the job's end is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from typing import Any

from gpudash.tasks import jobs
from gpudash.tasks.events import TaskCancelled, TaskEvent, TaskFinished, TaskLost, TaskOutput
from gpudash.tasks.logs import LineAssembler, TaskLog
from gpudash.transport.base import Transport, TransportError

RECONNECT_FOR_S = 120.0
CANCEL_GRACE_S = jobs.JOB_GRACE_S


async def _reconnect(transport: Transport, until: float) -> bool:
    """Connect again, backing off from 0.2 s to 5 s, until `until`; whether it came back."""
    delay = 0.2
    while time.monotonic() < until:
        try:
            await transport.connect()
            return True
        except TransportError:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    return False


_END = object()  # the attach stream ended (the job ended, or attach's own timeout)


class JobFollower:
    """One job's log followed from the host to the job's end, as task events.

    The steps, each a method: `_read_log` streams the log from `offset` (one attach) while
    watching `cancel`; `_status` asks the job directory what happened; on a dropped connection
    `_reconnected` retries for `reconnect_for` seconds and the next attach resumes from
    `offset`, the count of bytes already received; `_fetch_rest` picks up bytes the attach did
    not deliver; `_end` writes the tail and says the one end event. A cancel asked for
    (`cancel` set) runs `jobs.cancel` beside the stream, retried after a reconnect if it failed.
    """

    def __init__(
        self,
        host: str,
        task: str,
        transport: Transport,
        run: str | None,
        *,
        log: TaskLog,
        assembler: LineAssembler,
        cancel: asyncio.Event,
        root: str | None = None,
        reconnect_for: float = RECONNECT_FOR_S,
        cancel_grace: float = CANCEL_GRACE_S,
        affects: tuple[str, ...] = (),
        name: str | None = None,
    ) -> None:
        self.host = host
        self.job = task
        """The job directory followed."""
        self.task = name or task
        """The task its events are of: the job's own name, or the task a helper job serves
        (a direct copy's source-side job is followed as the copy task of its destination)."""
        self.transport = transport
        self.run = run
        self.log = log
        self.assembler = assembler
        self.cancel = cancel
        self.root = root
        self.reconnect_for = reconnect_for
        self.cancel_grace = cancel_grace
        self.affects = affects
        self.offset = 0
        """Bytes of the host's log received so far: where the next attach starts."""
        self.said_cancelled = False
        """True once the TaskCancelled end has been said (the local log notes it)."""
        self._started = time.monotonic()
        self._failure: TransportError | None = None
        self._cancel_job: asyncio.Task[jobs.JobStatus] | None = None
        self._cancel_wait: asyncio.Future[Any] | None = None

    async def events(self) -> AsyncGenerator[TaskEvent, None]:
        """TaskOutput events, then exactly one end event (finished, cancelled or lost)."""
        waiter = self._cancel_wait = asyncio.ensure_future(self.cancel.wait())
        try:
            while True:
                async with contextlib.aclosing(self._read_log()) as outputs:
                    async for output in outputs:
                        yield output
                status = await self._status()
                if status is None:
                    if not await self._reconnected():
                        yield TaskLost(
                            self.host,
                            self.task,
                            "connection lost and not back in time; the job "
                            "may still be running on the host: run the task again to attach",
                        )
                        return
                    continue
                if self.run is not None and status.run not in (None, self.run):
                    replaced = f"replaced on the host by run {status.run}"
                    yield TaskLost(self.host, self.task, replaced)
                    return
                if status.state == "running":
                    continue  # the attach timed out or ended early: follow on from offset
                if status.size > self.offset:
                    rest = await self._fetch_rest()
                    if rest is None:
                        continue
                    if rest:
                        yield self._output(rest)
                    if self.offset < status.size:
                        continue
                for event in self._end(status):
                    self.said_cancelled = isinstance(event, TaskCancelled)
                    yield event
                return
        finally:
            waiter.cancel()
            if self._cancel_job is not None and not self._cancel_job.done():
                with contextlib.suppress(Exception):
                    await self._cancel_job

    # ---- the steps ------------------------------------------------------------------------------

    async def _read_log(self) -> AsyncGenerator[TaskOutput, None]:
        """One attach: the log from `offset` until the stream ends or drops (`_failure`)."""
        self._failure = None
        queue: asyncio.Queue[object] = asyncio.Queue()
        pumper = asyncio.ensure_future(self._pump(queue))
        try:
            while True:
                item = await self._next(queue)
                if item is None:
                    continue
                if item is _END:
                    return
                if isinstance(item, TransportError):
                    self._failure = item
                    return
                assert isinstance(item, bytes)
                yield self._output(item)
        finally:
            pumper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pumper

    async def _pump(self, queue: asyncio.Queue[object]) -> None:
        """The attach's chunks into `queue`, then `_END` or the TransportError that ended it."""
        try:
            async for chunk in jobs.attach(self.transport, self.job, self.offset, root=self.root):
                await queue.put(chunk)
            await queue.put(_END)
        except TransportError as exc:
            await queue.put(exc)

    async def _next(self, queue: asyncio.Queue[object]) -> object | None:
        """The next item of `queue`; while no cancel has been asked for, a cancel asked for
        first starts `jobs.cancel` and gives None (ask again)."""
        assert self._cancel_wait is not None
        if self._cancel_wait.done():
            return await queue.get()
        getter = asyncio.ensure_future(queue.get())
        try:
            await asyncio.wait({getter, self._cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if self._cancel_wait.done():
            self._start_cancel()
        try:
            return await getter
        except asyncio.CancelledError:
            if not getter.cancelled():
                raise
            return None

    async def _status(self) -> jobs.JobStatus | None:
        """The job directory's status, or None when the connection dropped."""
        try:
            if self._failure is not None:
                raise self._failure
            return await jobs.status(self.transport, self.job, root=self.root)
        except TransportError:
            return None

    async def _reconnected(self) -> bool:
        """Back within `reconnect_for` seconds; a cancel that failed meanwhile is asked again."""
        if not await _reconnect(self.transport, time.monotonic() + self.reconnect_for):
            return False
        job = self._cancel_job
        if job is not None and job.done() and job.exception():
            self._start_cancel()
        return True

    async def _fetch_rest(self) -> bytes | None:
        """The log's bytes past `offset` that the attach did not deliver; None if it failed."""
        try:
            return await jobs.fetch(self.transport, self.job, self.offset, root=self.root)
        except TransportError:
            return None

    def _end(self, status: jobs.JobStatus) -> list[TaskEvent]:
        """The unfinished line, if any, then the one end event the job's status says."""
        said: list[TaskEvent] = []
        tail = self.assembler.feed(b"", final=True)
        if tail:
            self.log.write(tail)
            said.append(TaskOutput(self.host, self.task, tuple(tail), "", self.offset))
        elapsed = time.monotonic() - self._started
        if status.state == "cancelled":
            self.log.write([f"# gpudash: cancelled (rc {status.rc})"])
            said.append(TaskCancelled(self.host, self.task, elapsed))
        elif status.state == "finished" and status.rc is not None:
            timed_out = status.reason == "timeout"
            self.log.write([f"# gpudash: rc {status.rc}{' (timed out)' if timed_out else ''}"])
            said.append(
                TaskFinished(self.host, self.task, status.rc, elapsed, timed_out, self.affects)
            )
        else:
            self.log.write(["# gpudash: lost"])
            said.append(
                TaskLost(
                    self.host,
                    self.task,
                    "the job ended on the host without an exit code "
                    "(killed, out of memory, or the host rebooted)",
                )
            )
        return said

    # ---- helpers --------------------------------------------------------------------------------

    def _output(self, data: bytes) -> TaskOutput:
        self.offset += len(data)
        lines = self.assembler.feed(data)
        self.log.write(lines)
        return TaskOutput(self.host, self.task, tuple(lines), self.assembler.partial, self.offset)

    def _start_cancel(self) -> None:
        """`jobs.cancel` beside the stream, unless one is going or has succeeded."""
        job = self._cancel_job
        if job is None or (job.done() and job.exception() is not None):
            self._cancel_job = asyncio.ensure_future(
                jobs.cancel(self.transport, self.job, grace=self.cancel_grace, root=self.root)
            )
