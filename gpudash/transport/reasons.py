"""Map what asyncssh and the socket layer raise to the one line a user sees.

The line says what went wrong and, where there is one, what to do about it. It never names
the host itself: the transport prefixes `<host>: `, and a jump failure nests as
`<target>: via jump <bastion>: <reason>`.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from dataclasses import dataclass

import asyncssh

from gpudash.files import RefusedFile
from gpudash.transport.hostkeys import Refusal
from gpudash.transport.sshproxy import ProxyFailed

_UNREACHABLE = {errno.EHOSTUNREACH, errno.ENETUNREACH}


@dataclass(frozen=True)
class Endpoint:
    """Who we tried to reach, as resolved through ~/.ssh/config where that was possible."""

    user: str | None
    address: str
    port: int

    def __str__(self) -> str:
        return f"{self.address}:{self.port}"


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def describe(
    exc: BaseException,
    endpoint: Endpoint,
    *,
    connect_timeout: float | None = None,
    refusal: Refusal | None = None,
) -> str:
    """The reason for a failed connect or channel open; never raises."""
    return one_line(_describe(exc, endpoint, connect_timeout, refusal))


def _describe(
    exc: BaseException,
    where: Endpoint,
    connect_timeout: float | None,
    refusal: Refusal | None,
) -> str:
    if isinstance(exc, ProxyFailed):  # before ConnectionLost: not a MaxStartups drop
        return str(exc)
    if isinstance(exc, RefusedFile):  # a known_hosts or key file that is a FIFO, a device...
        return str(exc)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        if refusal is not None:
            return refusal.reason()
        return f"host key not verifiable for {where}: {exc.reason}"
    if isinstance(exc, asyncssh.PermissionDenied):
        who = f"{where.user}@{where}" if where.user else str(where)
        return f"auth failed as {who}: load the key into ssh-agent (ssh-add) or set identity_file"
    if isinstance(exc, asyncssh.ChannelOpenError):
        hint = ""
        if exc.code == asyncssh.OPEN_CONNECT_FAILED:  # sshd's answer past MaxSessions
            hint = " (the server allows fewer sessions per connection: its MaxSessions?)"
        return f"cannot open a session channel: {exc.reason}{hint}"
    if isinstance(exc, (asyncssh.ConnectionLost, asyncssh.DisconnectError)):
        detail = exc.reason.rstrip(".") or "disconnected"
        return f"connection lost ({detail})"
    if isinstance(exc, asyncssh.KeyImportError):
        return f"cannot load identity_file: {exc}; load the key into ssh-agent instead"
    if isinstance(exc, asyncssh.Error):
        return f"ssh error: {exc.reason}"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        after = f" after {connect_timeout:g}s" if connect_timeout else ""
        found = f": {exc}" if str(exc) else ""  # what a look at the port found (handshake.py)
        return f"connect timed out{after} ({where}){found}"
    if isinstance(exc, socket.gaierror):
        return f"DNS name {where.address} does not resolve ({exc.strerror or exc})"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused by {where}"
    if isinstance(exc, ConnectionResetError):
        return f"connection reset by {where}"
    if isinstance(exc, OSError) and exc.errno in _UNREACHABLE:
        return f"no route to host {where}"
    if _all_refused(exc):
        return f"connection refused by {where}"
    if isinstance(exc, OSError) and exc.filename:
        return f"cannot read {exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, OSError):
        return f"cannot connect to {where}: {exc.strerror or exc}"
    if isinstance(exc, ValueError):
        return f"bad ssh settings: {exc}"
    return f"{type(exc).__name__}: {exc}"


def _all_refused(exc: BaseException) -> bool:
    """asyncio tried every address of the name and folded the refusals into one OSError."""
    text = str(exc)
    return (
        isinstance(exc, OSError)
        and exc.errno is None
        and "Multiple exceptions" in text
        and f"[Errno {errno.ECONNREFUSED}]" in text
    )
