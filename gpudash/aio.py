"""Small asyncio pieces the core shares: a 3.10-safe deadline and a fan-in of streams."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import TypeVar

T = TypeVar("T")


@contextlib.asynccontextmanager
async def deadline(seconds: float) -> AsyncIterator[None]:
    """Raise TimeoutError in the body once `seconds` have passed."""
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(seconds):
            yield
        return
    task = asyncio.current_task()
    assert task is not None
    fired = False

    def fire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    handle = asyncio.get_running_loop().call_later(seconds, fire)
    try:
        yield
    except asyncio.CancelledError:
        if fired:
            raise TimeoutError from None
        raise
    finally:
        handle.cancel()


async def merge(streams: Iterable[AsyncIterator[T]], *, reraise: bool = False) -> AsyncIterator[T]:
    """Run every stream at once and yield their items in arrival order.

    One slow or hung stream only delays itself. Each stream handles its own errors (a
    host's failure is an event, not an exception), unless `reraise`: then the first error
    of any stream ends the merge with it. Leaving early cancels the rest.
    """
    queue: asyncio.Queue[object] = asyncio.Queue()
    done = object()

    async def pump(stream: AsyncIterator[T]) -> None:
        try:
            async for item in stream:
                await queue.put(item)
        except Exception as exc:
            if not reraise:
                raise
            await queue.put(_Raised(exc))
        finally:
            await queue.put(done)

    tasks = [asyncio.ensure_future(pump(s)) for s in streams]
    try:
        remaining = len(tasks)
        while remaining:
            item = await queue.get()
            if item is done:
                remaining -= 1
            elif isinstance(item, _Raised):
                raise item.error
            else:
                yield item  # type: ignore[misc]
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class _Raised:
    def __init__(self, error: Exception) -> None:
        self.error = error
