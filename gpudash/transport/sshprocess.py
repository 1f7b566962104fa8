"""One `/bin/sh -s` on one SSH channel, as a RemoteProcess.

Output is read in chunks as it arrives (progress bars write `\\r`, not lines), and a dropped
connection ends the chunks quietly: `wait()` then returns None, which callers read as
"connection lost", never as success. Closing the channel does not stop the remote command;
the `timeout -k` in the exec string does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import asyncssh

from gpudash.transport.base import RemoteProcess, TransportError

_CLOSE_GRACE_S = 5.0
_CANCELLED_GRACE_S = 0.5
# read() returns as soon as anything has arrived; a large limit only lets a bulk stream (the
# copy task's tar) come in fewer, bigger pieces, which cuts the per-chunk work (and packets).
_READ_SIZE = 1 << 20


class SshProcess(RemoteProcess):
    """`/bin/sh -s` on one channel; its slot in the channel bound is freed exactly once."""

    def __init__(
        self,
        proc: asyncssh.SSHClientProcess[bytes],
        release: Callable[[], None],
        *,
        writable: bool = False,
    ):
        self._proc = proc
        self._writable = writable
        self._release: Callable[[], None] | None = release

    def _free(self) -> None:
        if self._release is not None:
            release, self._release = self._release, None
            release()

    async def chunks(self) -> AsyncIterator[bytes]:
        """Whatever has arrived; ends quietly when the connection drops (wait() says None)."""
        try:
            while chunk := await self._proc.stdout.read(_READ_SIZE):
                yield chunk
        except (asyncssh.Error, OSError):
            return

    async def write(self, data: bytes) -> None:
        """Send to stdin; waits while the channel's window is full (backpressure)."""
        if not self._writable:
            await super().write(data)
        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except (asyncssh.Error, OSError) as exc:
            raise TransportError(f"cannot write to the remote command: {exc}") from exc

    async def write_eof(self) -> None:
        if not self._writable:
            await super().write_eof()
        with contextlib.suppress(asyncssh.Error, OSError):
            self._proc.stdin.write_eof()

    async def wait(self) -> int | None:
        """Exit status, -N for signal N, None when the host closed without reporting one."""
        with contextlib.suppress(asyncssh.Error, OSError):
            await self._proc.wait()
        self._free()
        return self._proc.returncode

    async def close(self) -> None:
        """Close the channel (the remote `timeout -k` is what stops the command).

        The wait for the host to confirm is short when the caller is being cancelled (a
        probe deadline, a quit): a host gone silent would never confirm, and the slot is
        freed either way.
        """
        task = asyncio.current_task()
        cancelling = getattr(task, "cancelling", lambda: 0)() if task else 0
        grace = _CANCELLED_GRACE_S if cancelling else _CLOSE_GRACE_S
        try:
            self._proc.close()
            with contextlib.suppress(asyncio.TimeoutError, asyncssh.Error, OSError):
                await asyncio.wait_for(self._proc.wait_closed(), grace)
        finally:
            self._free()
