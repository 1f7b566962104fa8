"""Connect again when sshd drops a connection before login, as MaxStartups makes it do.

OpenSSH's MaxStartups (default 10:30:100) drops new connections at random once that many are
still unauthenticated: many gpudash hosts that are one machine (aliases, ports of one sshd),
one machine probed by two gpudash at once, or a busy shared bastion. The drop is a closed
socket before or during the key exchange, which asyncssh reports as ConnectionLost. It is
transient, so it is retried with jittered backoff within the host's connect_timeout; when
that runs out the reason says what the server did and the likely cause.

Through a ProxyCommand a lost connection is first asked of the proxy (sshproxy.py): a proxy
that failed ends the attempt with its own message instead of a MaxStartups retry loop.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import asyncssh

from gpudash.transport.sshproxy import ProxyCommand, ProxyFailed

BACKOFF_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
DROPPED = (
    "closed by the server before login (more connections at once than its MaxStartups "
    "allows, or a firewall/TCP wrapper refusing this client)"
)


async def connect_retrying(
    budget_s: float | None,
    *,
    proxy: str | None = None,
    running: list[ProxyCommand] | None = None,
    **kwargs: Any,
) -> Any:
    """`asyncssh.connect(**kwargs)`, retried while the server drops us before login.

    Each attempt gets what is left of `budget_s` (the connect_timeout); other failures
    raise at once. A `sock` (already connected) serves the first attempt only. `proxy`: a
    ProxyCommand started afresh for each attempt; the one that carried the connection is
    appended to `running` (the caller closes it with the connection).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s if budget_s else None
    sock = kwargs.pop("sock", None)
    for delay in (*BACKOFF_S, None):
        attempt = ProxyCommand(proxy) if proxy else None
        try:
            if attempt is not None:
                sock = await attempt.start()
            conn = await asyncssh.connect(**kwargs, sock=sock)
        except asyncio.TimeoutError:
            await _end(attempt, ask=False)
            why = await _what_answered(kwargs.get("options"))
            if why:
                raise asyncio.TimeoutError(why) from None
            raise
        except (asyncssh.ConnectionLost, ConnectionResetError) as exc:
            await _end(attempt, ask=True, cause=exc)
            pause = delay * random.uniform(0.5, 1.5) if delay is not None else None
            left = deadline - loop.time() if deadline is not None else None
            if pause is None or (left is not None and left <= pause + 0.2):
                raise asyncssh.ConnectionLost(DROPPED) from exc
            sock = None  # it carried the dropped attempt
            await asyncio.sleep(pause)
            if left is not None:
                kwargs["connect_timeout"] = left - pause
        except BaseException as exc:  # a proxy that exited at once: a broken pipe
            await _end(attempt, ask=isinstance(exc, OSError), cause=exc)
            raise
        else:
            if attempt is not None and running is not None:
                running.append(attempt)
            return conn
    raise AssertionError("unreachable")


async def _end(
    attempt: ProxyCommand | None, *, ask: bool, cause: BaseException | None = None
) -> None:
    """Close a failed attempt's proxy; when `ask`, raise ProxyFailed if the proxy failed."""
    if attempt is None:
        return
    why = await attempt.failure() if ask else None
    await attempt.close()
    if why:
        raise ProxyFailed(why) from cause


async def _what_answered(options: Any) -> str | None:
    """After a connect timeout on a direct connection: what was at the other end?

    One short TCP look (at most ~0.6 s) tells a silent drop (None: nothing to add) from a
    port that accepts and never greets, and from an sshd that greets but could not finish.
    """
    host, port = getattr(options, "host", None), getattr(options, "port", None)
    if not host or not port or getattr(options, "tunnel", None):
        return None
    if getattr(options, "proxy_command", None):
        return None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 0.3)
    except (OSError, asyncio.TimeoutError):
        return None
    try:
        first = await asyncio.wait_for(reader.read(4), 0.3)
    except (OSError, asyncio.TimeoutError):
        first = b""
    finally:
        writer.close()
    if first.startswith(b"SSH-"):
        return "sshd greets but the key exchange and login did not finish in time"
    if first:
        return "TCP connected but what answers is not SSH"
    return "TCP connected but no SSH greeting (not an SSH server, or its sshd is stuck)"
