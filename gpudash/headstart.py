"""Probe rounds begun before the dashboard exists, handed to it once it does.

Opening the app costs a few hundred milliseconds (importing Textual, building the screen)
that the hosts do not need to wait for: `HeadStart` starts every host's first round at once,
buffers its events, and the app's per-host worker takes the stream over when it starts. The
events are the same the app would have asked for; only the wait for the screen is overlapped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterable

from gpudash.config.model import Config
from gpudash.fleet import Fleet
from gpudash.model import Event, HostState, HostStateChanged

_END = object()
LOCAL_START_S = 0.2
"""The longest the screen waits for the local host's script to start (`local_started`)."""
SPARE_CPUS = 4
"""From this many CPUs on, the local host's probe starts with the remote ones."""


def head_start_hosts(config: Config, cpus: int | None = None) -> list[str]:
    """The hosts whose first round begins before the screen exists.

    Remote hosts always: their probe is the hosts' work and the network's wait. The local
    host only where the machine has CPUs to spare: its probe (nvidia-smi, each Python's
    `--version`, ...) runs on the very CPUs that import Textual and build the screen. On 2
    cores that made the first frame ~300 ms later and the panels no sooner (bench/bench_app.py);
    on a GPU server's dozens of cores the probe's processes run beside the import instead.
    """
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    local_too = cpus >= SPARE_CPUS
    return [h.name for h in config.hosts if local_too or h.transport != "local"]


class HeadStart:
    def __init__(self, fleet: Fleet, names: Iterable[str]) -> None:
        self._queues: dict[str, asyncio.Queue[object]] = {}
        self._pumps: dict[str, asyncio.Task[None]] = {}
        self._probing: dict[str, asyncio.Event] = {}
        local = {h.name for h in fleet.config.hosts if h.transport == "local"}
        for name in names:
            queue: asyncio.Queue[object] = asyncio.Queue()
            self._queues[name] = queue
            probing = asyncio.Event()
            if name in local:
                self._probing[name] = probing
            self._pumps[name] = asyncio.ensure_future(self._pump(fleet, name, queue, probing))

    @staticmethod
    async def _pump(
        fleet: Fleet, name: str, queue: asyncio.Queue[object], probing: asyncio.Event
    ) -> None:
        try:
            async for event in fleet.probe([name]):
                queue.put_nowait(event)
                if isinstance(event, HostStateChanged) and event.state is HostState.PROBING:
                    probing.set()  # the next step of this loop starts the host's script
        finally:
            probing.set()
            queue.put_nowait(_END)

    async def local_started(self, timeout: float = LOCAL_START_S) -> None:
        """Wait (at most `timeout`) until the local host's script is running.

        What precedes it (importing the sections' parsers and the transport, building the
        script) is Python work that, run beside Textual's import, gets half the interpreter
        lock and starts the script later: on the H200 its slowest tool (`nvidia-smi topo`,
        ~0.2 s) then decided when the last panel filled. Once started, the script's tools
        run on their own CPUs while Textual loads. Remote hosts are not waited for: their
        handshakes wait on the network, and the import uses that time."""
        waits = [e.wait() for e in self._probing.values()]
        if waits:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits), timeout)
            await asyncio.sleep(0)  # let each pump take its step: the spawn

    def take(self, name: str) -> AsyncIterator[Event] | None:
        """The host's first round, events so far included; None once taken (or never begun).

        Leaving the stream early (the app quits, the worker is cancelled) stops the round,
        which stops its remote processes, as leaving `Fleet.probe` does."""
        queue = self._queues.pop(name, None)
        if queue is None:
            return None
        return self._drain(name, queue)

    async def _drain(self, name: str, queue: asyncio.Queue[object]) -> AsyncIterator[Event]:
        pump = self._pumps.pop(name)
        try:
            while (item := await queue.get()) is not _END:
                yield item  # type: ignore[misc]
        finally:
            await _stop(pump)

    async def close(self) -> None:
        """Stop the rounds nobody took (the app quit before their workers started)."""
        self._queues.clear()
        pumps, self._pumps = list(self._pumps.values()), {}
        for pump in pumps:
            await _stop(pump)


async def _stop(task: asyncio.Task[None]) -> None:
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
