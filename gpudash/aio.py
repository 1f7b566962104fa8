"""`asyncio.timeout` for Python 3.10 too (it arrived in 3.11)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


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
