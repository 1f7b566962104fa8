"""The channel bound of one SSH connection, knowing how many of its slots are taken.

gpudash opens at most 8 channels per connection because OpenSSH's MaxSessions defaults to
10. A server configured lower (MaxSessions 1 or 2 is seen on locked-down hosts) refuses the
extra opens with "open failed"; knowing how many of our own channels are open tells that
refusal apart from one that will never clear, and `freed()` lets the refused open wait for
one of ours to close instead of failing the command.
"""

from __future__ import annotations

import asyncio


class Slots:
    """A semaphore of `size` with `taken` and a wait for the next release."""

    def __init__(self, size: int) -> None:
        self._sem = asyncio.Semaphore(size)
        self._freed = asyncio.Event()
        self.taken = 0
        self.released = 0  # releases so far: tells a refusal that came as one of ours closed

    async def acquire(self) -> None:
        await self._sem.acquire()
        self.taken += 1

    def release(self) -> None:
        self.taken -= 1
        self.released += 1
        self._sem.release()
        self._freed.set()
        self._freed = asyncio.Event()

    async def freed(self) -> None:
        """Return at the next release of any slot."""
        await self._freed.wait()
