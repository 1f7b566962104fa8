"""A direct copy: the bytes go from the source host to the destination over the hosts' own
network, never through gpudash, as two detached jobs (`direct_scripts` has their shell).

    gpudash:  one-use ed25519 key pair; the destination's host key from its live connection
    dest job (task name):          authorized_keys += restrict,from="SRC",command="recv.sh" KEY
    source job (NAME-to-DEST):     ssh -i KEY (StrictHostKeyChecking=yes, that host key only)
                                   N tar streams + byte ranges -> recv.sh -> DEST.gpudash-partial
                                   sha256 manifests on both hosts -> cmp -> rename into place

gpudash launches both, then follows the source job's log like any task's (a restart re-attaches
to it; quitting leaves both running). The key's removal is the jobs' own work (see
`direct_scripts`); gpudash sweeps once more when it sees the end, as a second chance only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from gpudash.tasks import events as ev
from gpudash.tasks import jobs, render
from gpudash.tasks.copy import direct_scripts as ds
from gpudash.tasks.copy import recv_script
from gpudash.tasks.copy.params import CopyParams, dial
from gpudash.tasks.follow import JobFollower
from gpudash.tasks.logs import LineAssembler, Masker, TaskLog
from gpudash.tasks.prepare import Prepared
from gpudash.transport.base import Transport, TransportError

READY_TIMEOUT_S = 60.0
# `gpudash-copy ready USER BASE` (`direct_scripts.DEST_JOB`)
_READY = re.compile(rb"^gpudash-copy ready (\S+) (none|partial|final)$", re.M)
DEST_END_WAIT_S = 30.0
HOST_KEY_ALIAS = "gpudash-copy-dest"


@dataclass(frozen=True)
class Ready:
    """The destination job's key is in place: the login name the source dials, and what the
    destination has at the copy's path (none, partial or final: a fan-out's chain feeds the
    destinations with none)."""

    user: str
    base: str


class DirectBlocked(Exception):
    """A direct copy cannot start here; the message says why and what to set."""


def source_job(task: str, dest: str) -> str:
    """The source's job name for the copy of `task` to `dest`: one job dir per destination."""
    slug = re.sub(r"[^a-z0-9_-]", "-", dest.lower())
    name = f"{task}-to-{slug}"
    if slug != dest or len(name) > 64:
        name = f"{name[:55]}-{hashlib.sha256(dest.encode()).hexdigest()[:8]}"
    return name


def host_key_line(transport: Transport) -> str:
    """`gpudash-copy-dest TYPE BASE64`: the key of the destination's live connection, which
    gpudash verified against its known_hosts when it connected (the source trusts only it)."""
    link = getattr(transport, "_link", None)
    conn = getattr(link, "conn", None)
    key = conn.get_server_host_key() if conn is not None else None
    if key is None:
        raise DirectBlocked("no verified host key for the destination (is it an SSH host?)")
    fields = key.export_public_key().decode().split()
    return f"{HOST_KEY_ALIAS} {fields[0]} {fields[1]}\n"


def key_pair() -> tuple[str, str]:
    """A fresh ed25519 pair: (private key in OpenSSH format, `ssh-ed25519 BASE64`)."""
    import asyncssh

    key = asyncssh.generate_private_key("ssh-ed25519")
    public = " ".join(key.export_public_key().decode().split()[:2])
    return key.export_private_key().decode(), public


async def source_address(source: Transport, dest_address: str, configured: str) -> str:
    """The address the destination will see the source connect from: the source's route
    to it (`ip route get`), else the source's configured address if it is an IP literal."""
    script = "{\n" + render.exports({"GPUDASH_ADDR": dest_address}) + ds.ROUTE + "} </dev/null\n"
    out, _ = await source.output(script, timeout=30)
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("addr "):
            with contextlib.suppress(ValueError):
                return str(ipaddress.ip_address(line[5:].strip()))
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(configured))
    raise DirectBlocked(
        "cannot tell which address the source connects from: set params.source_address"
    )


class DirectCopy:
    """One direct copy to `host`: the launch of both jobs, the follow, the second-chance sweep."""

    def __init__(
        self,
        host: str,
        dest: Transport,
        source: Transport,
        prepared: Prepared,
        params: CopyParams,
        cancel: asyncio.Event,
        *,
        task: str | None = None,
    ) -> None:
        self.host = host
        self.dest = dest
        self.source = source
        self.prepared = prepared
        self.p = params
        self.cancel = cancel
        self.job = prepared.spec.name
        """The destination job's name (the spec's), which also names the local log."""
        self.task = task or self.job
        """The task its events are of (a cache's copy is told as the main copy's task)."""
        self.src_job = source_job(self.job, host)
        # the private key's copies on the source that gpudash removes once this copy ended;
        # a fan-out member names only its own (`dN/files/id`): the others are still in use
        self.src_keys: tuple[str, ...] = ("files/id",)
        self._stopper: asyncio.Future[None] | None = None

    def dest_scripts(self, run: str, public: str, from_addr: str) -> tuple[str, str]:
        """The destination job's script and its receiving end (`files/recv.sh`)."""
        spec = self.prepared.spec
        common = {
            "GPUDASH_TO": self.p.to,
            "GPUDASH_RUN": run,
            "GPUDASH_REPLACE": "1" if self.p.replace else "0",
        }
        job = render.task_script(
            {
                **common,
                "GPUDASH_PUB": public,
                "GPUDASH_FROM_ADDR": from_addr,
                "GPUDASH_SOURCE": f"{self.p.source}:{self.p.path}",
                "GPUDASH_EXPIRES": str(int(spec.timeout or 6 * 3600) + 120),
            },
            ds.DEST_JOB,
            paths=["GPUDASH_TO"],
        )
        recv = render.exports(common) + render.home_expansion(["GPUDASH_TO"]) + recv_script.RECV
        return job, recv

    def _source_script(self, ready: Ready, address: str, port: int, from_addr: str) -> str:
        return render.task_script(
            {
                "GPUDASH_PATH": self.p.path,
                "GPUDASH_TO": self.p.to,
                "GPUDASH_DEST": self.host,
                "GPUDASH_ADDR": address,
                "GPUDASH_PORT": str(port),
                "GPUDASH_USER": ready.user,
                "GPUDASH_BASE": ready.base,
                "GPUDASH_STREAMS": str(self.p.streams),
                "GPUDASH_CHUNK_MB": str(self.p.chunk_mb),
                "GPUDASH_REPLACE": "1" if self.p.replace else "0",
                "GPUDASH_FROM_ADDR": from_addr,
            },
            ds.SOURCE_JOB,
            paths=["GPUDASH_PATH"],
        )

    async def wait_ready(self) -> tuple[Ready | None, bytes]:
        """The destination job's ready line once its key is in place, seen as it is written
        (the host watches its log: a poll from here every 0.2 s cost each copy 0.1-0.3 s on
        its critical path, measured in the rig 2026-12-07); None and its log when it ended
        first (it failed a check) or did not answer in time."""
        data = await jobs.wait_line(self.dest, self.job, "gpudash-copy ready ", READY_TIMEOUT_S)
        match = _READY.search(data)
        if match is None:
            return None, data
        return Ready(match[1].decode(errors="replace"), match[2].decode()), data

    async def _connect_both(self, address: str) -> str:
        """Both hosts connected at once (a handshake each, side by side), and the address the
        destination will see the source's connection come from."""

        async def route() -> str:
            await self.source.connect()
            configured = str(getattr(getattr(self.source, "host", None), "address", ""))
            return self.p.source_address or await source_address(self.source, address, configured)

        done = await asyncio.gather(self.dest.connect(), route(), return_exceptions=True)
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome
        return str(done[1])

    async def events(self) -> AsyncIterator[ev.TaskEvent]:
        """TaskStarted, the source job's log, exactly one end event (after TaskQueued and the
        check, which `run_copy` said)."""
        host, name = self.host, self.task
        dest_host = getattr(self.dest, "host", None)
        try:
            if dest_host is None or not hasattr(self.dest, "_link"):
                raise DirectBlocked(
                    'a direct copy needs an SSH destination (via = "gpudash" copies to this one)'
                )
            address, port = dial(self.p.dest_address, dest_host.address, dest_host.port or 22)
            from_addr = await self._connect_both(address)
            known = host_key_line(self.dest)
            run = jobs.new_run_id()
            private, public = key_pair()
            dest_script, recv = self.dest_scripts(run, public, from_addr)
            timeout = self.prepared.spec.timeout
            files = {"recv.sh": recv}
            dest_launch = jobs.Launch(self.job, dest_script, run, files=files, timeout=timeout)
            launched = await jobs.launch(self.dest, dest_launch)
            if launched.busy:
                async for event in self._follow(None, attached=True):
                    yield event
                return
            ready, said = await self.wait_ready()
            if ready is None:
                for line in said.decode(errors="replace").splitlines()[-5:]:
                    yield ev.TaskOutput(host, name, (f"{host}: {line}",), "", 0)
                yield ev.TaskFinished(host, name, 3, 0.0, False, ())
                return
            src_launch = jobs.Launch(
                self.src_job,
                self._source_script(ready, address, port, from_addr),
                run,
                files={"id": private, "known_hosts": known},
                timeout=self.prepared.spec.timeout,
            )
            src = await jobs.launch(self.source, src_launch)
        except DirectBlocked as exc:
            yield ev.TaskBlocked(host, name, str(exc))
            return
        except jobs.JobError as exc:
            yield ev.TaskBlocked(host, name, str(exc))
            return
        except TransportError as exc:
            yield ev.TaskLost(host, name, exc.reason)
            return
        async for event in self._follow(src.run, attached=src.busy, run=run):
            yield event

    async def _follow(
        self, src_run: str | None, *, attached: bool, run: str | None = None
    ) -> AsyncIterator[ev.TaskEvent]:
        host, name = self.host, self.task
        log = TaskLog(host, self.job)
        follower = JobFollower(
            host,
            self.src_job,
            self.source,
            src_run,
            log=log,
            assembler=LineAssembler(Masker(self.prepared.secrets.values())),
            cancel=self.cancel,
            affects=self.prepared.spec.affects,
            name=name,
        )
        yield ev.TaskStarted(host, name, src_run, attached, str(log.path), time.time())
        self.watch_cancel()
        end: ev.TaskEvent | None = None
        try:
            async with contextlib.aclosing(follower.events()) as stream:
                async for event in stream:
                    if ev.is_end(event):
                        end = event
                        continue
                    yield event
            async for output in self.after_events(run, log, follower.offset):
                yield output
        finally:
            await self.stop_watching()
            log.close()
        if end is not None:
            yield end

    # -- the ending, shared with a fan-out member (`fanout.follow_member`) -------------------

    def watch_cancel(self) -> None:
        """From now on a cancel stops the destination job too (its TERM trap removes the key
        and the partial copy); `stop_watching` ends the watch."""
        if self._stopper is None:
            self._stopper = asyncio.ensure_future(self._cancel_dest())

    async def stop_watching(self) -> None:
        stopper, self._stopper = self._stopper, None
        if stopper is not None:
            stopper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await stopper

    async def after_events(
        self, run: str | None, log: TaskLog, offset: int
    ) -> AsyncIterator[ev.TaskOutput]:
        """Once the source job ended: the destination's last word and the sweep's notes
        (`_after`), each written to `log` and said as output."""
        async for line in self._after(run):
            log.write([line])
            yield ev.TaskOutput(self.host, self.task, (line,), "", offset)

    async def _cancel_dest(self) -> None:
        """A cancel stops the destination job too (its TERM trap removes key and partial)."""
        await self.cancel.wait()
        with contextlib.suppress(TransportError):
            await jobs.cancel(self.dest, self.job)

    async def _after(self, run: str | None) -> AsyncIterator[str]:
        """Once the source job ended: the destination job's own last word (it ends within
        ~15 s of the source, within a second when the copy finished), then gpudash's
        second-chance sweep of both hosts, side by side."""
        status = None
        with contextlib.suppress(TransportError):
            status = await jobs.wait_end(self.dest, self.job, DEST_END_WAIT_S)
            data = await jobs.fetch(self.dest, self.job, 0)
            lines = data.decode(errors="replace").splitlines()
            for line in lines[-3:]:
                if not line.startswith("gpudash-copy ready"):
                    yield f"{self.host} (destination): {line}"
        if run is None:
            return
        sweep = render.exports({"GPUDASH_RUN": run, "GPUDASH_TASK": self.job}) + ds.DEST_SWEEP
        keys = " ".join(f'"$J/{key}"' for key in self.src_keys)
        gone = render.exports({"GPUDASH_TASK": self.src_job}) + (
            f'J="${{GPUDASH_JOBS:-$HOME/.cache/gpudash/jobs}}/$GPUDASH_TASK"\nrm -f {keys}\n'
        )
        await asyncio.gather(
            self.dest.output("{\n" + sweep + "} </dev/null\n", timeout=30),
            self.source.output("{\n" + gone + "} </dev/null\n", timeout=30),
            return_exceptions=True,  # each a second chance only: a lost host is no news here
        )
        if status is not None and not status.done:
            yield (
                f"{self.host} (destination): its job is still running; it removes the key"
                " itself when the source's session ends or the copy expires"
            )
