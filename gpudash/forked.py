"""The local host's first probe round, run in a forked process beside the app's start-up.

Opening the dashboard is Python on one interpreter lock: importing Textual, building the
screen, and, in the same process, the local round's own Python work (loading the sections'
parsers, building and starting the script, parsing what it prints). On a GPU server with
cores to spare that work can run on another core: `ForkedRound.start`, called before the
app's event loop exists, forks a child that probes the local host and sends each event,
pickled, through a pipe; the parent imports Textual meanwhile and takes the events over
(`Fleet.adopt`, which records them and computes the findings, as `Fleet.probe` does).

Remote hosts are not forked: their rounds wait on the network, which the import overlaps
already, and their SSH connection must stay in the app for its later rounds and tasks.

The child never outlives the round or the app: it exits when its round ends, when the
parent stops it (`close`: SIGTERM, which stops the round and so the script's process
group), when the parent dies (PR_SET_PDEATHSIG), and when the pipe's reader is gone.
If it ends without finishing its round, the stream says so and the caller probes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gpudash.config import Config
from gpudash.model import Event, ProbeFinished

if TYPE_CHECKING:
    from gpudash.fleet import Fleet

_HEADER = struct.Struct("!I")
_STOP_GRACE_S = 0.5
"""How long `close` waits for the child to stop its round before SIGKILL (the script's
heartbeat then ends the script within a second)."""
ENV_KNOB = "GPUDASH_FORK_LOCAL"
"""`0`: the local host's head start (if any) runs in the app's process, as before; `1`: it
runs forked even below `headstart.SPARE_CPUS` (tests, and benchmarks comparing the ways)."""


class ForkedRound:
    """One host's first round in a child process; its events arrive through `events()`."""

    def __init__(self, host: str, pid: int, read_fd: int) -> None:
        self.host = host
        self.pid = pid
        self._read_fd = read_fd
        self._reaped = False

    @classmethod
    def start(cls, config: Config, host: str) -> ForkedRound | None:
        """Fork the child for `host`'s round; None where forking is not safe or possible
        (no `fork`, or threads running: a forked child holds only the forking thread)."""
        if not hasattr(os, "fork") or threading.active_count() != 1:
            return None
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _child(config, host, write_fd)
        os.close(write_fd)
        return cls(host, pid, read_fd)

    async def events(self) -> AsyncIterator[Event]:
        """The child's events as they come; ends when the child closes the pipe."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self._read_fd, "rb", 0)
        )
        try:
            while True:
                try:
                    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
                    body = await reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    return
                yield pickle.loads(body)
        finally:
            transport.close()
            await self.close()

    async def close(self) -> None:
        """Stop the child (if it still runs) and reap it, within about half a second."""
        if self._reaped:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
            deadline = time.monotonic() + _STOP_GRACE_S
            while time.monotonic() < deadline:
                if self._reap():
                    return
                await asyncio.sleep(0.01)
        self._reap()

    def abandon(self) -> None:
        """Tell a child nobody will read to stop (the app failed before taking it over);
        it stops its round and exits on its own."""
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            self._reap()

    def _reap(self) -> bool:
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid = self.pid  # reaped elsewhere
        if pid:
            self._reaped = True
        return self._reaped


def _child(config: Config, host: str, write_fd: int) -> None:
    """Probe `host` once, writing each event to `write_fd`; then leave without running the
    parent's exit handlers or flushing its buffers (`os._exit`)."""
    status = 0
    try:
        _detach()
        asyncio.run(_probe(config, host, write_fd))
    except BaseException:  # whatever it was, the parent sees the stream cut short
        status = 1
    finally:
        os._exit(status)


def _detach() -> None:
    """Off the terminal (the app owns it), and gone when the parent is."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ctrl+c is the app's to handle
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the parent died before the line above
        os._exit(1)


async def _probe(config: Config, host: str, write_fd: int) -> None:
    from gpudash.fleet import Fleet

    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    fleet = Fleet(config, findings=False)  # the parent computes them, with its own peers
    with os.fdopen(write_fd, "wb", 0) as out:
        try:
            async for event in fleet.probe([host]):
                body = pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL)
                out.write(_HEADER.pack(len(body)) + body)  # a closed pipe ends the round
        finally:
            await fleet.close()


async def follow(fleet: Fleet, forked: ForkedRound) -> AsyncIterator[Event]:
    """The forked round's events, adopted by `fleet`; if the child ended before its round
    did (it crashed, or was killed), a round probed here follows, so the host never waits
    on a round nobody runs."""
    finished = False
    async for event in fleet.adopt(forked.events()):
        finished = finished or isinstance(event, ProbeFinished)
        yield event
    if not finished:
        async for event in fleet.probe([forked.host]):
            yield event
