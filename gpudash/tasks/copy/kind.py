"""The copy task as task events (direct, host to host: `gpudash.tasks.copy.direct`; through
gpudash with `via = "gpudash"`: below), like `gpudash.tasks.runner.run_task`: queued, the check on
the destination, started, the log (progress redraws in place), then exactly one end event.

The transfer itself is `gpudash.tasks.copy.transfer.Copy`; this module runs it beside the cancel
event, so a cancel stops both ends (by process group) and reports TaskCancelled. With
`params.caches`, the JIT caches the source has follow as copies of their own (`with_caches`,
`copy.caches`), told as the same one task. A model from a peer (`copy.peer`) is a run of this
with the folder it found.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from gpudash.tasks import events as ev
from gpudash.tasks.copy import caches
from gpudash.tasks.copy.params import CopyParams
from gpudash.tasks.copy.transfer import Copy
from gpudash.tasks.jobs import new_run_id
from gpudash.tasks.logs import LineAssembler, Masker, TaskLog
from gpudash.tasks.prepare import Prepared
from gpudash.tasks.runner import check_ends_run
from gpudash.transport.base import Transport, TransportError

if TYPE_CHECKING:
    from gpudash.tasks.copy.fanout import CopyGroup


async def run_copy(
    host: str,
    transport: Transport,
    prepared: Prepared,
    peer: Callable[[str], Transport | None] | None,
    *,
    cancel: asyncio.Event | None = None,
    check: bool = True,
    group: CopyGroup | None = None,
) -> AsyncIterator[ev.TaskEvent]:
    """The copy to `host` as task events, like `runner.run_task` (exactly one end event).
    `group`: the run's other destinations of this task, for a fan-out (`copy.fanout`); this
    host withdraws from it on every way out that does not join."""
    try:
        async for event in _run_copy(host, transport, prepared, peer, cancel, check, group):
            yield event
    finally:
        if group is not None:
            group.withdraw(host)


async def _run_copy(
    host: str,
    transport: Transport,
    prepared: Prepared,
    peer: Callable[[str], Transport | None] | None,
    cancel: asyncio.Event | None,
    check: bool,
    group: CopyGroup | None,
) -> AsyncIterator[ev.TaskEvent]:
    spec = prepared.spec
    name = spec.name
    params = CopyParams.of(spec.params)
    cancel = cancel or asyncio.Event()
    yield ev.TaskQueued(host, name)
    if cancel.is_set():
        yield ev.TaskCancelled(host, name, 0.0)
        return
    if not params.source:
        yield ev.TaskBlocked(host, name, f"set params.from (the source host) in [tasks.{name}]")
        return
    if params.source == host and params.to == params.path:
        # `gpudash run copy` with no host names every host, the source among them
        yield ev.TaskSkipped(host, name, "this is the copy's source host")
        return
    if peer is None:
        yield ev.TaskBlocked(
            host,
            name,
            "no way to reach the source host here (run_on_host needs peer=fleet_peer(fleet))",
        )
        return
    source = peer(params.source)
    if source is None:
        yield ev.TaskBlocked(host, name, f"source host {params.source!r} is not configured")
        return
    try:
        ended = await check_ends_run(host, transport, prepared) if check else None
    except TransportError as exc:
        yield ev.TaskLost(host, name, exc.reason)
        return
    if ended is not None:
        yield ended
        return
    stream = transfer(host, transport, source, prepared, params, cancel, group)
    if params.caches:
        stream = with_caches(host, transport, source, prepared, params, cancel, stream)
    async for event in stream:
        yield event


async def transfer(
    host: str,
    transport: Transport,
    source: Transport,
    prepared: Prepared,
    params: CopyParams,
    cancel: asyncio.Event,
    group: CopyGroup | None = None,
    *,
    task: str | None = None,
) -> AsyncIterator[ev.TaskEvent]:
    """One copy, source -> `host`, after the checks: TaskStarted, its log, one end event (a
    direct copy may end before it starts: blocked, or its destination job refused).

    The events are of `task` (default: the spec's name, which also names the copy's jobs and
    its local log): a cache's copy runs its own jobs, told as the main copy's task."""
    spec = prepared.spec
    job = spec.name
    name = task or job
    if params.via == "direct":
        from gpudash.tasks.copy.direct import DirectCopy

        direct = DirectCopy(host, transport, source, prepared, params, cancel, task=name)
        stream = direct.events()
        if group is not None:
            from gpudash.tasks.copy import fanout

            stream = fanout.member_events(group, direct)
        async for event in stream:
            yield event
        return

    run_id = new_run_id()
    log = TaskLog(host, job)
    started = time.monotonic()
    yield ev.TaskStarted(host, name, run_id, False, str(log.path), time.time())
    assembler = LineAssembler(Masker(prepared.secrets.values()))
    offset = 0
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    copy = Copy(params, host, transport, source, run_id, spec.timeout, queue.put_nowait)

    def output(data: bytes, final: bool = False) -> ev.TaskOutput:
        nonlocal offset
        offset += len(data)
        lines = assembler.feed(data, final=final)
        log.write(lines)
        return ev.TaskOutput(host, name, tuple(lines), assembler.partial, offset)

    work = asyncio.ensure_future(copy.run())
    waiter = asyncio.ensure_future(cancel.wait())
    cancelled = False
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, work, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield output(getter.result())
                continue
            getter.cancel()
            if work.done():
                break
            cancelled = True
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
            break
        while not queue.empty():
            yield output(queue.get_nowait())
        tail = assembler.feed(b"", final=True)
        if tail:
            log.write(tail)
            yield ev.TaskOutput(host, name, tuple(tail), "", offset)
        elapsed = time.monotonic() - started
        if cancelled:
            log.write(["# gpudash: cancelled (both ends stopped)"])
            yield ev.TaskCancelled(host, name, elapsed)
            return
        exc = work.exception()
        if isinstance(exc, TransportError):
            log.write([f"# gpudash: lost: {exc.reason}"])
            yield ev.TaskLost(host, name, exc.reason)
            return
        if exc is not None:
            raise exc
        rc = work.result()
        log.write([f"# gpudash: rc {rc}{' (timed out)' if copy.timed_out else ''}"])
        yield ev.TaskFinished(host, name, rc, elapsed, copy.timed_out, spec.affects)
    finally:
        waiter.cancel()
        if not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
        log.close()


async def with_caches(
    host: str,
    transport: Transport,
    source: Transport,
    prepared: Prepared,
    params: CopyParams,
    cancel: asyncio.Event,
    main: AsyncIterator[ev.TaskEvent],
) -> AsyncIterator[ev.TaskEvent]:
    """The main copy, then each JIT cache the source has (`copy.caches`) as its own verified
    copy, told as ONE task: the caches' starts become log lines, and the one end is ok only
    when the main copy and every cache the source has verified. A cache that failed does not
    stop the next; a cancel or a lost host stops all."""
    name = prepared.spec.name
    started = time.monotonic()
    log_path = ""

    def said(text: str) -> ev.TaskOutput:
        append_log(log_path, [text])
        return ev.TaskOutput(host, name, (text,), "", 0)

    async for event in main:
        if isinstance(event, ev.TaskStarted):
            log_path = event.log_path
        if not ev.is_end(event):
            yield event
            continue
        if not ev.succeeded(event):
            yield event
            return
    try:
        found = []
        for transport_ in (source, transport):
            out, _ = await transport_.output(caches.PROBE, timeout=30)
            found.append(caches.parse(out.decode(errors="replace")))
    except TransportError as exc:
        yield ev.TaskLost(host, name, exc.reason)
        return
    plan = caches.plan(found[0], found[1])
    for cache, path in plan.skipped:
        yield said(f"cache {cache}: not on {params.source} ({path}): skipped")
    failed: list[str] = []
    for cache, path, to in plan.copies:
        if cancel.is_set():
            yield ev.TaskCancelled(host, name, time.monotonic() - started)
            return
        yield said(f"cache {cache}: {params.source}:{path} -> {to}")
        one, copy = caches.prepared_for(prepared, cache, path, to, params)
        async for event in transfer(host, transport, source, one, copy, cancel, task=name):
            if isinstance(event, ev.TaskStarted):
                yield said(f"cache {cache}: started (run {event.run}; local log {event.log_path})")
            elif isinstance(event, (ev.TaskCancelled, ev.TaskLost, ev.TaskDetached)):
                yield event
                return
            elif isinstance(event, ev.TaskBlocked):
                yield said(f"cache {cache}: not copied: {event.reason}")
                failed.append(cache)
            elif isinstance(event, ev.TaskFinished):
                if not event.ok:
                    failed.append(cache)
                yield said(f"cache {cache}: {'verified' if event.ok else 'FAILED'}")
            elif not ev.is_end(event):
                yield event
    if failed:
        yield said(f"caches not copied: {', '.join(failed)}")
    elif plan.copies:
        yield said(f"caches verified: {', '.join(c for c, _, _ in plan.copies)}")
    elapsed = time.monotonic() - started
    yield ev.TaskFinished(host, name, 1 if failed else 0, elapsed, False, prepared.spec.affects)


def append_log(path: str, lines: list[str]) -> None:
    """Lines gpudash itself adds to a run's local log after its copy wrote it (the log file
    exists, 0600; appending keeps that); a log that cannot be written costs only the lines."""
    if not path:
        return
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as f:
        f.write("".join(f"{line}\n" for line in lines))
