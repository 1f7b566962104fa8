"""A fan-out: one copy task to many destinations in one run, as a chain fed once by the
source (`fanout_scripts` has the shell and why a failing destination costs only itself).

    CopyGroup        the run's destinations of one copy task: each joins (or withdraws, when
                     it was skipped, blocked or already done); once all have said, one launch
    launch()         every destination job (the one-use key, allowed from the chain's hosts),
                     then one source job, `TASK-to-fanout`
    follow_member()  each destination follows that job and sees its own lines (`@dN ...`),
                     ending with its own verdict (`@dN gpudash-copy end dN RC`)

The private half of the key also goes to every destination (each forwards to the next one);
every destination job removes it when it ends, like its authorized_keys line.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudash.tasks import events as ev
from gpudash.tasks import jobs, render
from gpudash.tasks.copy import direct_scripts as ds
from gpudash.tasks.copy import fanout_scripts as fs
from gpudash.tasks.copy.direct import (
    DirectBlocked,
    DirectCopy,
    host_key_line,
    key_pair,
    source_address,
    source_job,
)
from gpudash.tasks.copy.params import CopyParams
from gpudash.tasks.follow import JobFollower
from gpudash.tasks.logs import LineAssembler, Masker, TaskLog
from gpudash.transport.base import Transport, TransportError

if TYPE_CHECKING:
    from gpudash.tasks.spec import TaskSpec

_LABELED = re.compile(r"^@(d\d+) ?(.*)$", re.S)
_END = re.compile(r"^gpudash-copy end (d\d+) (\d+)$")
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
_LABEL = re.compile(r"^d[0-9]{1,4}$")


@dataclass(frozen=True)
class Member:
    """What the launch gives one destination: its label in the source job's log, or why it
    could not take part (`failed`), or `solo` (it alone joined: a plain direct copy)."""

    label: str = ""
    src_job: str = ""
    src_run: str | None = None
    busy: bool = False
    names: tuple[tuple[str, str], ...] = ()
    failed: tuple[str, ...] = ()
    solo: bool = False


class CopyGroup:
    """The destinations of one copy task in one run (`gpudash run copy D1 D2 ...`)."""

    def __init__(self, task: str, hosts: Sequence[str]) -> None:
        self.task = task
        self.waiting = set(hosts)
        self.joined: dict[str, DirectCopy] = {}
        self._settled = asyncio.Event()
        self._launch: asyncio.Future[dict[str, Member]] | None = None
        self._check()

    def withdraw(self, host: str) -> None:
        """`host` will not join (skipped, blocked, already done, or it ended)."""
        self.waiting.discard(host)
        self._check()

    def _check(self) -> None:
        if not self.waiting:
            self._settled.set()

    async def join(self, copy: DirectCopy) -> Member:
        """Wait for every other destination to join or withdraw; then the one launch."""
        self.joined[copy.host] = copy
        self.waiting.discard(copy.host)
        self._check()
        await self._settled.wait()
        if self._launch is None:
            self._launch = asyncio.ensure_future(launch(list(self.joined.values())))
        members = await asyncio.shield(self._launch)
        return members.get(copy.host, Member(failed=("not launched",)))


async def member_events(group: CopyGroup, copy: DirectCopy) -> AsyncIterator[ev.TaskEvent]:
    """One destination of a fan-out: joins the group, then follows the one source job (or,
    the only one to join, runs as a plain direct copy)."""
    host, name = copy.host, copy.task
    member = await group.join(copy)
    if member.solo:
        async for event in copy.events():
            yield event
        return
    if member.failed:
        for line in member.failed:
            yield ev.TaskOutput(host, name, (f"{host}: {line}",), "", 0)
        yield ev.TaskFinished(host, name, 3, 0.0, False, ())
        return
    async for event in follow_member(copy, member):
        yield event


def copy_group(spec: TaskSpec, hosts: Sequence[str]) -> CopyGroup | None:
    """The destinations of a direct copy task fed together, when it has two or more (the
    source itself is no destination when the copy lands on the same path there): the copy
    kind's `together` hook."""
    p = CopyParams.of(spec.params)
    if p.via != "direct" or not p.fanout or p.dest_address:
        return None  # dest_address names one destination's way in: each goes alone
    dests = [h for h in hosts if not (h == p.source and p.to == p.path)]
    return CopyGroup(spec.name, dests) if len(dests) >= 2 else None


async def _connect(transport: Transport) -> TransportError | None:
    """The connection made, or why not."""
    try:
        await transport.connect()
    except TransportError as exc:
        return exc
    return None


async def _host_key(copy: DirectCopy, alias: str) -> str:
    line = host_key_line(copy.dest)
    return alias + line[line.index(" ") :]


async def _ready(copy: DirectCopy, run: str, public: str, froms: str, files: dict) -> Member:
    """One destination job launched and its key in place: `label` is its line's end in the
    dests file (`USER BASE`) until the caller sets it."""
    dest_script, recv = copy.dest_scripts(run, public, froms)
    launch_ = jobs.Launch(
        copy.job,
        dest_script,
        run,
        files={"recv.sh": recv, **files},
        timeout=copy.prepared.spec.timeout,
    )
    launched = await jobs.launch(copy.dest, launch_)
    if launched.busy:
        return Member(failed=("a copy to this host is already running: run it again later",))
    ready, said = await copy.wait_ready()
    if ready is None:
        return Member(failed=tuple(said.decode(errors="replace").splitlines()[-5:]))
    return Member(label=f"{ready.user} {ready.base}")


async def launch(copies: list[DirectCopy]) -> dict[str, Member]:
    """Every destination's job, then the one source job (or `solo` for a lone member)."""
    if len(copies) == 1:
        return {copies[0].host: Member(solo=True)}

    first = copies[0]
    source, p, name = first.source, first.p, first.job
    src_job = source_job(name, "fanout")
    out: dict[str, Member] = {}
    try:
        # every host's handshake at once (one after the other, they were 0.2-0.4 s of a
        # fan-out's start to 4 on a 2-core VM), then the job's status beside the routes
        reached = await asyncio.gather(_connect(source), *(_connect(c.dest) for c in copies))
        if reached[0] is not None:
            raise reached[0]
        live: list[DirectCopy] = []
        for copy, failed in zip(copies, reached[1:], strict=True):
            if failed is None:
                live.append(copy)
            else:
                out[copy.host] = Member(failed=(f"cannot reach {copy.host}: {failed.reason}",))
        known = "".join([await _host_key(c, f"gpudash-copy-d{i + 1}") for i, c in enumerate(live)])
        addrs = [str(c.dest.host.address) for c in live]  # type: ignore[attr-defined]
        configured = str(getattr(getattr(source, "host", None), "address", ""))
        froms = {p.source_address} if p.source_address else set()
        routes = [source_address(source, a, configured) for a in addrs if not p.source_address]
        routes += [source_address(c.dest, addrs[i + 1], addrs[i]) for i, c in enumerate(live[:-1])]
        status, found = await asyncio.gather(jobs.status(source, src_job), asyncio.gather(*routes))
        if status.state == "running":
            return await _attach(copies, src_job, status.run)
        froms.update(found)
        run = jobs.new_run_id()
        private, public = key_pair()
        files = {"id": private, "known_hosts": known}
        said = await asyncio.gather(
            *[_ready(c, run, public, ",".join(sorted(froms)), files) for c in live]
        )
    except (TransportError, jobs.JobError, DirectBlocked) as exc:
        reason = getattr(exc, "reason", None) or str(exc)
        return {c.host: out.get(c.host) or Member(failed=(f"fan-out: {reason}",)) for c in copies}
    ready = [(c, m.label) for c, m in zip(live, said, strict=True) if not m.failed]
    for c, m in zip(live, said, strict=True):
        if m.failed:
            out[c.host] = m
    if not ready:
        return out
    index = {c.host: i + 1 for i, c in enumerate(live)}
    dests = "".join(
        f"gpudash-copy-d{index[c.host]} {c.dest.host.address} {c.dest.host.port or 22} {end}\n"  # type: ignore[attr-defined]
        for c, end in ready
    )
    # labels follow the dests file's line numbers (the chain order)
    labels = {c.host: f"d{i + 1}" for i, (c, _) in enumerate(ready)}
    names = tuple((labels[c.host], _shown(c.host)) for c, _ in ready)
    common = {
        "GPUDASH_PATH": p.path,
        "GPUDASH_TO": p.to,
        "GPUDASH_STREAMS": str(p.streams),
        "GPUDASH_CHUNK_MB": str(p.chunk_mb),
        "GPUDASH_REPLACE": "1" if p.replace else "0",
    }
    one = render.exports(common) + render.home_expansion(["GPUDASH_PATH"]) + ds.SOURCE_JOB
    job = jobs.Launch(
        src_job,
        render.task_script(common, fs.FANOUT_JOB, paths=["GPUDASH_PATH"]),
        run,
        files={
            "id": private,
            "known_hosts": known,
            "dests": dests,
            "names": "".join(f"{label} {shown}\n" for label, shown in names),
            "one.sh": one,
        },
        timeout=first.prepared.spec.timeout,
    )
    try:
        launched = await jobs.launch(source, job)
    except (TransportError, jobs.JobError) as exc:
        reason = getattr(exc, "reason", None) or str(exc)
        return {c.host: Member(failed=(f"the source job did not start: {reason}",)) for c in copies}
    for c, _ in ready:
        out[c.host] = Member(labels[c.host], src_job, launched.run, launched.busy, names)
    return out


def _shown(host: str) -> str:
    return host if _NAME.match(host) else "?"


async def _attach(copies: list[DirectCopy], src_job: str, run: str | None) -> dict[str, Member]:
    """The fan-out job is already running (a restart, another terminal): follow it."""
    script = render.exports({"GPUDASH_TASK": src_job}) + (
        'cat "${GPUDASH_JOBS:-$HOME/.cache/gpudash/jobs}/$GPUDASH_TASK/files/names"\n'
    )
    text, _ = await copies[0].source.output("{\n" + script + "} </dev/null\n", timeout=30)
    names = _names(text.decode(errors="replace"))
    label = {shown: lab for lab, shown in names}
    return {
        c.host: Member(label[c.host], src_job, run, True, names)
        if c.host in label
        else Member(failed=("a fan-out copy without this host is running: run it again later",))
        for c in copies
    }


def _names(text: str) -> tuple[tuple[str, str], ...]:
    """The `names` file of a running fan-out (`LABEL HOST` lines): remote text, so only
    labels `dN` (they name a key path gpudash removes) and host names it could have written."""
    out = []
    for line in text.splitlines():
        label, _, shown = line.partition(" ")
        if _LABEL.match(label) and _NAME.match(shown):
            out.append((label, shown))
    return tuple(out)


def _shown_line(line: str, label: str, names: dict[str, str]) -> tuple[str | None, int | None]:
    """The line as this destination sees it (None: another destination's), and its verdict
    when the line is its end."""
    match = _LABELED.match(line)
    if match:
        if match[1] != label:
            return None, None
        line = match[2]
        end = _END.match(line)
        if end:
            return None, int(end[2])
    return re.sub(r"@(d\d+)", lambda m: names.get(m[1], m[0]), line), None


async def follow_member(copy: DirectCopy, member: Member) -> AsyncIterator[ev.TaskEvent]:
    """The fan-out job's log as this destination's events; the end is its own verdict."""
    host, name = copy.host, copy.task
    # its `_after` removes this destination's copy of the key on the source, only that one:
    # the other destinations' runs may still be sending (the fan-out job removes its own)
    copy.src_job = member.src_job
    copy.src_keys = (f"{member.label}/files/id",) if _LABEL.match(member.label) else ()
    names = dict(member.names)
    log = TaskLog(host, copy.job)
    follower = JobFollower(
        host,
        member.src_job,
        copy.source,
        member.src_run,
        log=log,
        assembler=LineAssembler(Masker(copy.prepared.secrets.values())),
        cancel=copy.cancel,
        affects=copy.prepared.spec.affects,
        name=name,
    )
    started = time.monotonic()
    yield ev.TaskStarted(host, name, member.src_run, member.busy, str(log.path), time.time())
    copy.watch_cancel()
    end: ev.TaskEvent | None = None
    rc: int | None = None
    try:
        async with contextlib.aclosing(follower.events()) as stream:
            async for event in stream:
                if ev.is_end(event):
                    end = event
                    continue
                if isinstance(event, ev.TaskOutput):
                    lines = []
                    for line in event.lines:
                        shown, verdict = _shown_line(line, member.label, names)
                        rc = verdict if verdict is not None else rc
                        if shown is not None:
                            lines.append(shown)
                    partial, _ = _shown_line(event.partial, member.label, names)
                    # this destination's lines only (the follower already tells them as its task)
                    event = ev.TaskOutput(host, name, tuple(lines), partial or "", event.offset)
                yield event
                if rc is not None:
                    break
        async for output in copy.after_events(member.src_run, log, follower.offset):
            yield output
    finally:
        await copy.stop_watching()
        log.close()
    if rc is not None:
        affects = copy.prepared.spec.affects
        yield ev.TaskFinished(host, name, rc, time.monotonic() - started, False, affects)
    elif end is not None:
        yield end
