"""Run one task on one host as an async stream of events; the CLI prints it, the app renders it.

    run_task(host, transport, prepared, cancel=...)   one task on one host
    follow_job(host, transport, task, run=...)        a job already running (found on start-up)

Several tasks, their needs and many hosts are `gpudash.tasks.fleet_run`'s.

Each task on each host yields the events of `gpudash.tasks.events`, ending in exactly one end
event. A run is: the spec's `check` (exit 0: TaskSkipped, nothing launched), then `jobs.launch`
(or attach to the run already going: `TaskStarted(attached=True)`), then the job followed to
its end by `gpudash.tasks.follow.JobFollower`: the log streamed from byte offset 0 and
re-attached from the byte count received after any drop, so no line is lost or doubled, then
the rc file. Setting `cancel` stops the remote process group; the stream goes on until the
job's end is read, then says TaskCancelled. With `keep_attached`, a run that was already
going (someone else started it) is never cancelled: `cancel` then only stops following it,
and its end event is TaskDetached (the job goes on on the host).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable

from gpudash.tasks import jobs
from gpudash.tasks.events import (
    TaskBlocked,
    TaskCancelled,
    TaskDetached,
    TaskEvent,
    TaskLost,
    TaskNotConnected,
    TaskQueued,
    TaskSkipped,
    TaskStarted,
    is_end,
)
from gpudash.tasks.follow import CANCEL_GRACE_S, RECONNECT_FOR_S, JobFollower
from gpudash.tasks.logs import LineAssembler, Masker, TaskLog
from gpudash.tasks.prepare import Prepared
from gpudash.transport.base import Transport, TransportError

CHECK_TIMEOUT_S = 60.0


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


async def check_ends_run(host: str, transport: Transport, prepared: Prepared) -> TaskEvent | None:
    """The end event when the task's check ends the run before it starts (already done, or
    the connection lost); None when the task is to run. Raises TransportError.

    Shared with the copy kind (`gpudash.tasks.copy.kind`), which runs its check the same way."""
    name = prepared.spec.name
    if prepared.check is None:
        return None
    code = await run_check(transport, prepared)
    if code == 0:
        return TaskSkipped(host, name, "already done (its check exited 0)")
    if code is None:
        return TaskLost(host, name, "connection lost during the check")
    return None


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
    keep_attached: bool = False,
) -> AsyncIterator[TaskEvent]:
    """One task on one host, from its check to its end event (always exactly one).

    `keep_attached`: when the launch finds the task already running, `cancel` detaches
    instead of cancelling it (`gpudash run`: ctrl+c must never kill a run it only watched)."""
    spec = prepared.spec
    name = spec.name
    cancel = cancel or asyncio.Event()
    yield TaskQueued(host, name)
    if cancel.is_set():
        yield TaskCancelled(host, name, 0.0)
        return
    try:
        await transport.connect()
    except TransportError as exc:
        yield TaskNotConnected(host, name, exc.reason)
        return
    try:
        if check:
            ended = await check_ends_run(host, transport, prepared)
            if ended is not None:
                yield ended
                return
        if cancel.is_set():  # asked during the check: launch nothing
            yield TaskCancelled(host, name, 0.0)
            return
        launch = jobs.Launch(
            name,
            prepared.script,
            run_id=jobs.new_run_id(),
            secrets=prepared.secrets_env,
            files=prepared.files,
            timeout=spec.timeout,
            sudo=spec.sudo,
            root=root,
        )
        launched = await jobs.launch(transport, launch)
    except TransportError as exc:
        yield TaskLost(host, name, exc.reason)
        return
    except jobs.JobDirUnwritable as exc:
        yield TaskBlocked(host, name, exc.on(host))
        return
    except jobs.JobError as exc:
        yield TaskBlocked(host, name, str(exc))
        return

    log = TaskLog(host, name)
    detaching = keep_attached and launched.busy
    follower = JobFollower(
        host,
        name,
        transport,
        launched.run,
        log=log,
        assembler=LineAssembler(Masker(prepared.secrets.values())),
        cancel=asyncio.Event() if detaching else cancel,
        root=root,
        reconnect_for=reconnect_for,
        cancel_grace=cancel_grace,
        affects=spec.affects,
    )
    yield TaskStarted(host, name, launched.run, launched.busy, str(log.path), time.time())
    events = follower.events()
    if detaching:
        events = detach_on(cancel, events, host, name, launched.run)
    try:
        async with contextlib.aclosing(events) as stream:
            async for event in stream:
                yield event
    finally:
        asked = " (cancel asked)" if follower.said_cancelled else ""
        log.write([f"# gpudash: offset {follower.offset}{asked}"])
        log.close()


async def follow_job(
    host: str,
    transport: Transport,
    task: str,
    *,
    run: str | None = None,
    cancel: asyncio.Event | None = None,
    root: str | None = None,
    secrets: Iterable[str] = (),
) -> AsyncGenerator[TaskEvent, None]:
    """A job found running on the host (gpudash restarted): its log from byte 0 to its end.

    Unlike `run_task` nothing is launched, so a job that ends meanwhile is never re-run. No
    spec is at hand here, so its TaskFinished names no sections (`affects` empty), and the
    caller passes every configured secret (`prepare.configured_secrets`) to be masked."""
    log = TaskLog(host, task)
    follower = JobFollower(
        host,
        task,
        transport,
        run,
        log=log,
        assembler=LineAssembler(Masker(secrets)),
        cancel=cancel or asyncio.Event(),
        root=root,
    )
    yield TaskStarted(host, task, run, True, str(log.path), time.time())
    try:
        async with contextlib.aclosing(follower.events()) as events:
            async for event in events:
                yield event
    finally:
        log.close()


async def detach_on(
    stop: asyncio.Event,
    events: AsyncGenerator[TaskEvent, None],
    host: str,
    task: str,
    run: str | None,
) -> AsyncGenerator[TaskEvent, None]:
    """`events` until their end, or until `stop` is set: then the following stops (the
    stream is closed, which ends the attach on the host, never the job) and the end event
    is TaskDetached."""
    waiter = asyncio.ensure_future(stop.wait())
    try:
        async with contextlib.aclosing(events) as stream:
            while not stop.is_set():
                step = asyncio.ensure_future(anext(stream))
                await asyncio.wait({step, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    step.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await step
                    break
                try:
                    event = step.result()
                except StopAsyncIteration:
                    return
                yield event
                if is_end(event):
                    return
        yield TaskDetached(host, task, run)
    finally:
        waiter.cancel()
