"""Run one task on one host as an async stream of events; the CLI prints it, the app renders it.

    run_task(host, transport, prepared, cancel=...)   one task on one host
    follow_job(host, transport, task, run=...)        a job already running (found on start-up)

Several tasks, their needs and many hosts are `gpudash.tasks.fleet_run`'s.

Each task on each host yields the events of `gpudash.tasks.events`, ending in exactly one end
event. A run is: the spec's `check` (exit 0: TaskSkipped, nothing launched), then `jobs.launch`
(or attach to the run already going: `TaskStarted(attached=True)`), then the log streamed from
byte offset 0 and re-attached from the byte count received after any drop, so no line is lost
or doubled, then the rc file. Setting `cancel` stops the remote process group; the stream goes
on until the job's end is read, then says TaskCancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets as _secrets
import time
from collections.abc import AsyncIterator

from gpudash.tasks import jobs
from gpudash.tasks.events import (
    TaskBlocked,
    TaskCancelled,
    TaskEvent,
    TaskFinished,
    TaskLost,
    TaskOutput,
    TaskQueued,
    TaskSkipped,
    TaskStarted,
)
from gpudash.tasks.logs import LineAssembler, Masker, TaskLog
from gpudash.tasks.prepare import Prepared
from gpudash.transport.base import Transport, TransportError

CHECK_TIMEOUT_S = 60.0
RECONNECT_FOR_S = 120.0
CANCEL_GRACE_S = 10.0


# --- one task on one host ------------------------------------------------------------------------


async def run_check(transport: Transport, prepared: Prepared) -> int | None:
    """The task's `check` on the host: its exit status (0: already done, so the task is
    skipped), or None when the connection was lost before it answered."""
    assert prepared.check is not None
    process = await transport.start(prepared.check, timeout=CHECK_TIMEOUT_S)
    try:
        async for _ in process.chunks():
            pass
        return await process.wait()
    finally:
        await process.close()


async def _reconnect(transport: Transport, until: float) -> bool:
    delay = 0.2
    while time.monotonic() < until:
        try:
            await transport.connect()
            return True
        except TransportError:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    return False


_END = object()


async def run_task(
    host: str,
    transport: Transport,
    prepared: Prepared,
    *,
    cancel: asyncio.Event | None = None,
    root: str | None = None,
    reconnect_for: float = RECONNECT_FOR_S,
    cancel_grace: float = CANCEL_GRACE_S,
    check: bool = True,
) -> AsyncIterator[TaskEvent]:
    """One task on one host, from its check to its end event (always exactly one)."""
    spec = prepared.spec
    name = spec.name
    cancel = cancel or asyncio.Event()
    mask = Masker(prepared.secrets.values())
    yield TaskQueued(host, name)
    if cancel.is_set():
        yield TaskCancelled(host, name, 0.0)
        return
    try:
        if check and prepared.check is not None:
            code = await run_check(transport, prepared)
            if code == 0:
                yield TaskSkipped(host, name, "already done (its check exited 0)")
                return
            if code is None:
                yield TaskLost(host, name, "connection lost during the check")
                return
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + _secrets.token_hex(3)
        launched = await jobs.launch(
            transport,
            name,
            prepared.script,
            run_id=run_id,
            secrets=prepared.secrets_env,
            files=prepared.files,
            timeout=spec.timeout,
            sudo=spec.sudo,
            root=root,
        )
    except TransportError as exc:
        yield TaskLost(host, name, exc.reason)
        return
    except jobs.JobError as exc:
        yield TaskBlocked(host, name, str(exc))
        return

    log = TaskLog(host, name)
    started = time.monotonic()
    yield TaskStarted(host, name, launched.run, launched.busy, str(log.path), time.time())
    assembler = LineAssembler(mask)
    offset = 0
    wanted_cancel = False
    try:
        async for event in _follow(
            host,
            name,
            transport,
            launched.run,
            assembler,
            log,
            cancel,
            root,
            reconnect_for,
            cancel_grace,
            started,
        ):
            if isinstance(event, TaskOutput):
                offset = event.offset
            elif isinstance(event, TaskCancelled):
                wanted_cancel = True
            yield event
    finally:
        log.write([f"# gpudash: offset {offset}{' (cancel asked)' if wanted_cancel else ''}"])
        log.close()


async def follow_job(
    host: str,
    transport: Transport,
    task: str,
    *,
    run: str | None = None,
    cancel: asyncio.Event | None = None,
    root: str | None = None,
) -> AsyncIterator[TaskEvent]:
    """A job found running on the host (gpudash restarted): its log from byte 0 to its end.

    Unlike `run_task` nothing is launched, so a job that ends meanwhile is never re-run."""
    cancel = cancel or asyncio.Event()
    log = TaskLog(host, task)
    started = time.monotonic()
    yield TaskStarted(host, task, run, True, str(log.path), time.time())
    try:
        async for event in _follow(
            host,
            task,
            transport,
            run,
            LineAssembler(Masker()),
            log,
            cancel,
            root,
            RECONNECT_FOR_S,
            CANCEL_GRACE_S,
            started,
        ):
            yield event
    finally:
        log.close()


async def _follow(
    host: str,
    name: str,
    transport: Transport,
    run: str | None,
    assembler: LineAssembler,
    log: TaskLog,
    cancel: asyncio.Event,
    root: str | None,
    reconnect_for: float,
    cancel_grace: float,
    started: float,
) -> AsyncIterator[TaskEvent]:
    offset = 0
    cancel_task: asyncio.Task[jobs.JobStatus] | None = None
    cancel_wait = asyncio.ensure_future(cancel.wait())

    def output(data: bytes, final: bool = False) -> TaskOutput:
        nonlocal offset
        offset += len(data)
        lines = assembler.feed(data, final=final)
        log.write(lines)
        return TaskOutput(host, name, tuple(lines), assembler.partial, offset)

    def start_cancel() -> None:
        nonlocal cancel_task
        if cancel_task is None or (cancel_task.done() and cancel_task.exception() is not None):
            cancel_task = asyncio.ensure_future(
                jobs.cancel(transport, name, grace=cancel_grace, root=root)
            )

    try:
        while True:
            queue: asyncio.Queue[object] = asyncio.Queue()

            async def pump(start: int, queue: asyncio.Queue[object] = queue) -> None:
                try:
                    async for chunk in jobs.attach(transport, name, start, root=root):
                        await queue.put(chunk)
                    await queue.put(_END)
                except TransportError as exc:
                    await queue.put(exc)

            pumper = asyncio.ensure_future(pump(offset))
            failure: TransportError | None = None
            try:
                while True:
                    if not cancel_wait.done():
                        getter = asyncio.ensure_future(queue.get())
                        try:
                            await asyncio.wait(
                                {getter, cancel_wait}, return_when=asyncio.FIRST_COMPLETED
                            )
                        finally:
                            if not getter.done():
                                getter.cancel()
                        if cancel_wait.done():
                            start_cancel()
                        try:
                            item = await getter
                        except asyncio.CancelledError:
                            if not getter.cancelled():
                                raise
                            continue
                    else:
                        item = await queue.get()
                    if item is _END:
                        break
                    if isinstance(item, TransportError):
                        failure = item
                        break
                    assert isinstance(item, bytes)
                    yield output(item)
            finally:
                pumper.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pumper

            try:
                if failure is not None:
                    raise failure
                status = await jobs.status(transport, name, root=root)
            except TransportError:
                if not await _reconnect(transport, time.monotonic() + reconnect_for):
                    yield TaskLost(
                        host,
                        name,
                        "connection lost and not back in time; the job "
                        "may still be running on the host: run the task again to attach",
                    )
                    return
                if cancel_task is not None and cancel_task.done() and cancel_task.exception():
                    start_cancel()
                continue
            if run is not None and status.run not in (None, run):
                yield TaskLost(host, name, f"replaced on the host by run {status.run}")
                return
            if status.state == "running":
                continue  # the attach timed out or ended early: follow on from offset
            if status.size > offset:
                try:
                    rest = await jobs.fetch(transport, name, offset, root=root)
                except TransportError:
                    continue
                if rest:
                    yield output(rest)
                if offset < status.size:
                    continue
            tail = assembler.feed(b"", final=True)
            if tail:
                log.write(tail)
                yield TaskOutput(host, name, tuple(tail), "", offset)
            elapsed = time.monotonic() - started
            if status.state == "cancelled":
                log.write([f"# gpudash: cancelled (rc {status.rc})"])
                yield TaskCancelled(host, name, elapsed)
            elif status.state == "finished" and status.rc is not None:
                timed_out = status.reason == "timeout"
                log.write([f"# gpudash: rc {status.rc}{' (timed out)' if timed_out else ''}"])
                spec_affects: tuple[str, ...] = ()
                yield TaskFinished(host, name, status.rc, elapsed, timed_out, spec_affects)
            else:
                log.write(["# gpudash: lost"])
                yield TaskLost(
                    host,
                    name,
                    "the job ended on the host without an exit code "
                    "(killed, out of memory, or the host rebooted)",
                )
            return
    finally:
        cancel_wait.cancel()
        if cancel_task is not None and not cancel_task.done():
            with contextlib.suppress(Exception):
                await cancel_task
