"""Quitting within a budget: stop the app's I/O workers, then close what they used.

Apart from app.py so the app stays the composition and the keys; it takes the app's worker
manager and the things to close, not the app.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.worker_manager import WorkerManager

IO_GROUPS = ("probe:", "task:", "jobs:")
"""The worker groups that talk to hosts. Task workers only follow their jobs: stopping them
leaves the jobs running, detached, on the hosts (a restart finds them again)."""


async def stop_io(
    workers: WorkerManager, closers: Iterable[Callable[[], Awaitable[None]]], budget_s: float
) -> None:
    """Cancel every I/O worker (a probe's remote processes are killed as its streams close),
    wait for them, then run each closer in turn; never longer than `budget_s` in all (each
    step gets at least 50 ms)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s
    stopping = [w for w in workers if (w.group or "").startswith(IO_GROUPS)]
    for worker in stopping:
        worker.cancel()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(
            workers.wait_for_complete(stopping), max(0.05, deadline - loop.time())
        )
    for close in closers:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(close(), max(0.05, deadline - loop.time()))
