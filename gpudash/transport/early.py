"""TCP connections opened before asyncssh is imported, so that the connect overlaps the import.

Importing asyncssh and `cryptography` takes ~0.1 s of a `gpudash` start (2-vCPU development
VM) before a first connection could begin. A non-blocking `connect()` issued first completes
in the kernel meanwhile, and the server's version line waits in the socket buffer: over a
50 ms link that is the TCP handshake and the server's first bytes, ~80 ms of a one-host probe.

Only what cannot be resolved differently is opened here: an IP literal, no jump host. The
transport then takes a socket only if it is connected by the time its turn comes and
~/.ssh/config resolved the same address and port with no proxy; every other socket is
closed and its host connects as it always does, so failures read exactly as before.
"""

from __future__ import annotations

import errno
import select
import socket
from collections.abc import Iterable
from typing import Protocol


class _Host(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def address(self) -> str: ...
    @property
    def port(self) -> int | None: ...
    @property
    def jump(self) -> str | None: ...


def open_early(hosts: Iterable[_Host], limit: int) -> dict[str, socket.socket]:
    """Start connecting to the first `limit` hosts that qualify; by host name."""
    early: dict[str, socket.socket] = {}
    for host in hosts:
        if len(early) >= limit:
            break
        family = literal_family(host.address)
        if host.transport != "ssh" or host.jump or family is None:
            continue
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        if sock.connect_ex((host.address, host.port or 22)) in (0, errno.EINPROGRESS):
            early[host.name] = sock
        else:
            sock.close()
    return early


def connected(sock: socket.socket, address: str, port: int) -> socket.socket | None:
    """`sock` when it is connected to `address`:`port` right now; otherwise it is closed and
    the answer is None (the caller connects the usual way, which reports any failure)."""
    try:
        _, writable, _ = select.select([], [sock], [], 0)
        if writable and not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            peer = sock.getpeername()
            if _same_address(peer[0], address) and peer[1] == port:
                return sock
    except OSError:
        pass
    sock.close()
    return None


def literal_family(address: str) -> int | None:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, address)
        except OSError:
            continue
        return family
    return None


def _same_address(a: str, b: str) -> bool:
    family = literal_family(a)
    if family is None or family != literal_family(b):
        return False
    return socket.inet_pton(family, a) == socket.inet_pton(family, b)
