"""A `ProxyCommand` run by gpudash, so that its failure is reported as its own.

asyncssh runs a ProxyCommand with the parent's stderr (its messages land on the dashboard's
screen) and reports its exit as a lost connection, which gpudash read as sshd dropping the
handshake (MaxStartups) and retried until connect_timeout. OpenSSH runs it as
`$SHELL -c "exec COMMAND"` with stdin/stdout on a socket and stderr shown to the user, and a
failing proxy ends the attempt (ssh(1) prints the proxy's message, then
"kex_exchange_identification: Connection closed by remote host"). So gpudash starts the
command itself the same way (one socketpair end handed to asyncssh as `sock=`), keeps the
first line of its stderr, and after a lost connection asks it what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket

from gpudash.text import clean

FAILED_PREFIX = "ProxyCommand failed"
_LINE_LIMIT = 300
_EXIT_WAIT_S = 1.0


class ProxyFailed(Exception):
    """The ProxyCommand exited (or complained) before the SSH login finished; str() is the
    whole reason ("ProxyCommand failed (exit status 1): <its stderr's first line>")."""


class ProxyCommand:
    """One attempt's proxy process; start() gives the socket asyncssh talks SSH over."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.first_line = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> socket.socket:
        ours, theirs = socket.socketpair()
        shell = os.environ.get("SHELL") or "/bin/sh"  # as OpenSSH: $SHELL, else /bin/sh
        try:
            self._proc = await asyncio.create_subprocess_exec(
                shell,
                "-c",
                f"exec {self.command}",
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # not in the terminal's process group: no Ctrl-C
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._reader = asyncio.create_task(self._drain())
        return ours

    async def _drain(self) -> None:
        """Keep the first non-empty stderr line; read (and drop) the rest so the proxy never
        blocks on a full pipe."""
        assert self._proc is not None and self._proc.stderr is not None
        while True:
            try:
                line = await self._proc.stderr.readline()
            except (ValueError, OSError):  # a line past the stream limit: skip it
                continue
            if not line:
                return
            if not self.first_line:
                text = clean(line.decode("utf-8", errors="replace")).strip()
                self.first_line = text[:_LINE_LIMIT]

    async def failure(self) -> str | None:
        """After the connection was lost before login: the proxy's own reason when it exited
        with a failure or said something; None when it looks like the server dropped us."""
        if self._proc is None:
            return None
        try:
            status = await asyncio.wait_for(self._proc.wait(), _EXIT_WAIT_S)
        except asyncio.TimeoutError:
            return None  # still running: the far side closed, not the proxy
        if self._reader is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._reader), _EXIT_WAIT_S)
        if status == 0 and not self.first_line:
            return None
        said = f": {self.first_line}" if self.first_line else ""
        how = f"exit status {status}" if status >= 0 else f"killed by signal {-status}"
        return f"{FAILED_PREFIX} ({how}){said}"

    async def close(self) -> None:
        """End the process (its whole session) if it still runs, and reap it."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), _EXIT_WAIT_S)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader


def proxy_command(config: object) -> str | None:
    """~/.ssh/config's ProxyCommand for this host (tokens already expanded), None for none."""
    get = getattr(config, "get", None)
    value = get("ProxyCommand", None) if get is not None else None
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value)
    if not value or str(value).strip().lower() == "none":
        return None
    return str(value)
