"""SSH transport over asyncssh: one connection per host, one shared connection per bastion.

Why it looks the way it does (measured pitfalls, see shared/research/remote-exec.md):
- channels open with `encoding=None`: one invalid UTF-8 byte under asyncssh's strict
  default tears down the whole connection, and every probe on it;
- at most `channels_per_connection` (8) channels at once: OpenSSH's MaxSessions is 10 and an
  eleventh open fails outright, so extra `start()` calls queue instead;
- handshakes are bounded pool-wide (16): MaxStartups drops unauthenticated connections
  beyond ~10, and a burst of key exchanges spikes the CPU;
  a handshake the server drops anyway is retried within connect_timeout (handshake.py);
- a jump host is opened once and passed as `tunnel=` to every target behind it: a string
  tunnel (or ProxyJump from ~/.ssh/config) would open a new bastion connection per target;
- only options the HostConfig sets are passed, so ~/.ssh/config (Hostname, User, Port,
  IdentityFile, ProxyJump, UserKnownHostsFile) and the ssh-agent keep working; the file is
  read as ssh(1) reads it, CanonicalizeHostname and its second pass included (sshconfig.py).

Warnings (host key not verified under `host_key_policy = "insecure"`) are data, not output:
they collect in `SshTransport.warnings`, once per transport. The core never prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import asyncssh

from gpudash.transport.base import (
    RemoteProcess,
    Transport,
    TransportError,
    input_command,
    input_script,
    script_command,
)
from gpudash.transport.early import connected, literal_family
from gpudash.transport.handshake import connect_retrying
from gpudash.transport.hostkeys import HostKeyCheck, known_hosts_tokens
from gpudash.transport.reasons import Endpoint, describe
from gpudash.transport.slots import Slots
from gpudash.transport.sshcanon import ResolveError, getaddrinfo_daemon
from gpudash.transport.sshconfig import connection_options, read_ssh_config
from gpudash.transport.sshhost import JumpSpec, SshHost, parse_jump
from gpudash.transport.sshkeys import existing_identities
from gpudash.transport.sshprocess import SshProcess
from gpudash.transport.sshproxy import ProxyCommand, proxy_command

log = logging.getLogger("gpudash.transport.ssh")

KEEPALIVE_INTERVAL_S = 15
KEEPALIVE_COUNT_MAX = 3
_CLOSE_GRACE_S = 5.0
_OPEN_RETRY_S = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)
_SESSION_WAIT_S = 30.0
_LATE_RELEASE_S = (0.2, 0.4, 0.8, 1.6)  # after one of ours closed while an open was refused
# SSH carries stderr on its own stream, so the order against stdout is lost in transit;
# merging on the host keeps it, as the local transport's pipe does. `stderr=STDOUT` still
# catches what the login shell itself prints before the script runs.
_MERGE_STDERR = b"exec 2>&1\n"
# Bulk transfers (the copy task) are bound by asyncssh's per-packet Python work: 256 KiB
# packets (OpenSSH's own are 32 KiB) and an 8 MiB window cut the calls per byte, and AES-GCM
# costs asyncssh half the CPU of chacha20-poly1305 where the CPU has AES instructions
# (measured: bench/bench_copy.py). A `Ciphers` line in ~/.ssh/config still wins.
_WINDOW = 8 << 20
_MAX_PACKET = 256 << 10
_AES_FIRST = "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"


@functools.cache
def _cpu_has_aes() -> bool:
    """x86 `flags` or arm64 `Features` in /proc/cpuinfo list `aes`; elsewhere, assume not."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return "aes" in value.split()
    except OSError:
        pass
    return False


def _identities(host: SshHost, options: dict[str, Any], ssh_config: Any) -> tuple[str, ...]:
    """Set `client_keys` in `options` to the identity files that exist (the host's
    identity_file, else ~/.ssh/config's IdentityFile lines, both passes: sshconfig.py), as
    OpenSSH skips a missing one (sshkeys.py); returns the missing ones. Left unset when
    neither names a file: asyncssh then offers the agent's keys and ~/.ssh/id_*, as ssh(1)
    does."""
    wanted: Iterable[str] = host.identity_files
    from_config = not wanted
    # A bastion given as `user@host:port` borrowed the target's identity_file; like `ssh -J`,
    # its own IdentityFile lines in ~/.ssh/config come first (README, OpenSSH compatibility).
    if from_config or isinstance(host, JumpSpec):
        own = ssh_config.get("IdentityFile", ()) or ()
        if own or from_config:
            wanted, from_config = own, True
    if not wanted:
        return ()
    found = existing_identities(wanted)
    # [] (every file missing) makes asyncssh fall back to the agent and ~/.ssh/id_*
    options["client_keys"] = list(found.present)
    if from_config:  # as asyncssh treats IdentityFile: an encrypted key is skipped
        options["ignore_encrypted"] = True
    return found.missing


async def _name_resolves(name: str, port: int, budget: float | None) -> float | None:
    """Look `name` up once in a daemon thread before asyncssh does, within the connect
    budget; what is left of the budget comes back.

    asyncssh resolves in asyncio's default executor, and a lookup the DNS server never
    answers holds that thread for the resolver's own timeout (30 s with `timeout:30`), which
    `asyncio.run` waits for before the command may exit: the host failed at its
    connect_timeout, the exit came 30 s later. A name that resolves here resolves again
    for asyncssh at once; one that fails is left for asyncssh to fail as usual."""
    if literal_family(name) is not None:
        return budget
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        await asyncio.wait_for(
            getaddrinfo_daemon(name, port, type=socket.SOCK_STREAM), budget or None
        )
    except asyncio.TimeoutError:  # worded by `describe` as a connect timeout, with this why
        raise asyncio.TimeoutError(f"resolving {name} did not finish") from None
    except (OSError, UnicodeError):
        return budget  # asyncssh fails it the usual way, with the usual words
    return None if budget is None else max(budget - (loop.time() - started), 0.1)


class _Failure(Exception):
    """A reason without the host prefix, so a jump failure can nest inside its target's."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Link:
    conn: asyncssh.SSHClientConnection
    channels: Slots


class SshTransport(Transport):
    """One host over one asyncssh connection, reopened by the next connect() once lost."""

    kind = "ssh"

    def __init__(self, host: SshHost, *, pool: SshPool | None = None) -> None:
        self.host = host
        self._owns_pool = pool is None
        self.pool = pool if pool is not None else SshPool([host])
        self.warnings: list[str] = []
        self._warned_insecure = False
        self._link: _Link | None = None
        self._lock = asyncio.Lock()
        self._proxies: list[ProxyCommand] = []  # the ProxyCommand carrying the link, if any

    @property
    def connected(self) -> bool:
        return self._link is not None and not self._link.conn.is_closed()

    async def connect(self) -> None:
        try:
            await self._connection(frozenset())
        except _Failure as failure:
            raise TransportError(f"{self.host.name}: {failure.reason}") from failure.__cause__

    async def _connection(self, seen: frozenset[str]) -> _Link:
        """The live link, opening it (and any bastion first) when there is none."""
        if self.host.name in seen:  # before the lock: a loop would wait on itself
            raise _Failure(f"jump loop through {self.host.name}")
        async with self._lock:
            if self._link is not None and not self._link.conn.is_closed():
                return self._link
            self._link = None
            await self._end_proxies()
            tunnel = await self._tunnel(seen | {self.host.name})
            conn = await self._open(tunnel)
            self._link = _Link(conn, Slots(self.pool.channels_per_connection))
            return self._link

    async def _tunnel(self, seen: frozenset[str]) -> asyncssh.SSHClientConnection | None:
        try:
            bastion = self.pool.bastion(self.host)
        except ValueError:
            raise _Failure(f"jump {self.host.jump!r} is not [user@]host[:port]") from None
        if bastion is None:
            return None
        try:
            return (await bastion._connection(seen)).conn
        except _Failure as failure:
            raise _Failure(f"via jump {bastion.host.name}: {failure.reason}") from failure

    async def _open(
        self, tunnel: asyncssh.SSHClientConnection | None
    ) -> asyncssh.SSHClientConnection:
        host = self.host
        try:
            check = HostKeyCheck(host.host_key_policy, host.known_hosts)
        except ValueError as exc:
            raise _Failure(str(exc)) from exc
        options: dict[str, Any] = {
            "host": host.address,
            "client_factory": check.client_factory,
            "connect_timeout": host.connect_timeout,
            "keepalive_interval": KEEPALIVE_INTERVAL_S,
            "keepalive_count_max": KEEPALIVE_COUNT_MAX,
            "encoding": None,
        }
        if tunnel is not None:
            options["tunnel"] = tunnel
        if host.port:
            options["port"] = host.port
        if host.user:
            options["username"] = host.user
        where = Endpoint(host.user, host.address, host.port or 22)
        skipped: tuple[str, ...] = ()
        budget: float | None = host.connect_timeout
        async with self.pool.handshakes:
            try:
                # ~/.ssh/config in ssh(1)'s two passes with hostname canonicalization
                # (sshconfig.py); the options are built up front to learn what it resolved
                # (the known_hosts files, the reason lines), and connect() builds on them
                # without reading the file again.
                ssh_config = await read_ssh_config(
                    host.address,
                    user=host.user,
                    port=host.port,
                    jump=tunnel is not None,
                    timeout=host.connect_timeout,
                )
                if budget and ssh_config.lookup_s:  # canonicalization's lookups spent some
                    budget = options["connect_timeout"] = max(budget - ssh_config.lookup_s, 0.1)
                skipped = _identities(host, options, ssh_config.config)
                resolved = await connection_options(ssh_config, **options)
                where = Endpoint(resolved.username, resolved.host, resolved.port)
                check.configure(
                    resolved.config,
                    known_hosts_tokens(
                        original=host.address,
                        host=resolved.host,
                        port=resolved.port,
                        user=resolved.username,
                        alias=resolved.config.get("HostKeyAlias"),
                    ),
                )
                known = check.asyncssh_known_hosts()
                extra: dict[str, Any] = {}
                if resolved.config.get("Ciphers") is None and _cpu_has_aes():
                    extra["encryption_algs"] = _AES_FIRST
                proxy = proxy_command(resolved.config) if tunnel is None else None
                if tunnel is None and proxy is None:
                    extra["sock"] = self.pool.take_early(host.name, resolved)
                    if extra["sock"] is None:
                        budget = await _name_resolves(resolved.host, resolved.port, budget)
                        options["connect_timeout"] = budget
                conn = await connect_retrying(  # again after a MaxStartups drop
                    budget,
                    proxy=proxy,
                    running=self._proxies,
                    **options,
                    **extra,
                    known_hosts=known,
                    options=resolved,
                )
            except asyncssh.PermissionDenied as exc:
                check.commit()  # the key exchange succeeded: the new key is proven
                failure = self._failure(exc, where, check)
                if skipped:  # say which key files were not there (ssh -v: "no such identity")
                    failure = _Failure(f"{failure.reason} (not found: {', '.join(skipped)})")
                raise failure from exc
            except ResolveError as exc:  # ssh(1) stops on the name here too
                raise _Failure(str(exc)) from exc
            except Exception as exc:
                raise self._failure(exc, where, check) from exc
        check.commit()
        if check.recorded:
            log.info("%s: %s in %s", host.name, check.recorded, check.record_file)
        if check.policy == "insecure" and not self._warned_insecure:
            self._warned_insecure = True
            self.warnings.append(
                f'{host.name}: host key not verified (host_key_policy = "insecure")'
            )
        return conn

    def _failure(self, exc: BaseException, where: Endpoint, check: HostKeyCheck) -> _Failure:
        reason = describe(
            exc, where, connect_timeout=self.host.connect_timeout, refusal=check.refusal
        )
        return _Failure(reason)

    async def start(self, script: str, *, timeout: float | None = None) -> RemoteProcess:
        head = _MERGE_STDERR + script.encode()
        return await self._start(script_command(timeout), head, eof=True)

    async def start_input(self, script: str, *, timeout: float | None = None) -> RemoteProcess:
        head = input_script(_MERGE_STDERR.decode() + script)
        return await self._start(input_command(timeout), head, eof=False)

    async def _start(self, command: str, head: bytes, *, eof: bool) -> RemoteProcess:
        for retry in (False, True):
            reused = self.connected
            await self.connect()
            link = self._link
            assert link is not None
            await link.channels.acquire()
            try:
                proc = await self._create_process(link, command)
            except (asyncssh.Error, OSError) as exc:
                link.channels.release()
                if reused and not retry and link.conn.is_closed():
                    continue  # the idle connection had died unnoticed: reconnect once
                where = Endpoint(self.host.user, self.host.address, self.host.port or 22)
                reason = describe(exc, where)
                raise TransportError(f"{self.host.name}: {reason}") from exc
            with contextlib.suppress(asyncssh.Error, OSError):
                proc.stdin.write(head)
                if eof:
                    proc.stdin.write_eof()
            return SshProcess(proc, link.channels.release, writable=not eof)
        raise AssertionError("unreachable")

    @staticmethod
    async def _create_process(link: _Link, command: str) -> asyncssh.SSHClientProcess[bytes]:
        """Open the channel, waiting out sshd's late release of closed sessions.

        sshd frees a closed session's MaxSessions slot only after the packets it read with
        the CLOSE are handled, so a burst of close-then-open can briefly count 11 sessions
        against a limit of 10 ("no more sessions" in its log; measured with 20 starts).
        A server whose MaxSessions is below our bound refuses for as long as our other
        channels stay open: then the open waits (up to _SESSION_WAIT_S) for one to close.
        """
        delays = iter(_OPEN_RETRY_S)
        released = link.channels.released
        while True:
            try:
                return await link.conn.create_process(
                    command,
                    encoding=None,
                    stderr=asyncssh.STDOUT,
                    window=_WINDOW,
                    max_pktsize=_MAX_PACKET,
                )
            except asyncssh.ChannelOpenError as exc:
                if exc.code != asyncssh.OPEN_CONNECT_FAILED or link.conn.is_closed():
                    raise
                delay = next(delays, None)
                if delay is None:
                    if link.channels.released != released:
                        # one of ours closed while we tried: sshd frees its slot a bit later
                        released = link.channels.released
                        delays = iter(_LATE_RELEASE_S)
                        continue
                    if link.channels.taken <= 1:  # none of ours to wait for: a real refusal
                        raise
                    try:
                        await asyncio.wait_for(link.channels.freed(), _SESSION_WAIT_S)
                    except asyncio.TimeoutError:
                        raise exc from None
                    delays = iter(_OPEN_RETRY_S)
                    continue
            await asyncio.sleep(delay)

    async def close(self) -> None:
        """Close the connection, and the bastions too when this transport made its own pool."""
        link, self._link = self._link, None
        if link is not None:
            link.conn.close()
            with contextlib.suppress(asyncio.TimeoutError, asyncssh.Error, OSError):
                await asyncio.wait_for(link.conn.wait_closed(), _CLOSE_GRACE_S)
        await self._end_proxies()
        if self._owns_pool:
            await self.pool.close()

    async def _end_proxies(self) -> None:
        proxies, self._proxies = self._proxies, []
        for proxy in proxies:
            await proxy.close()


class SshPool:
    """Creates the transports of one fleet and owns what they share.

    `config_or_hosts` is a Config (its hosts, and its max_handshakes unless one is given) or
    an iterable of HostConfig; a `jump` naming one of these hosts uses that host's settings.
    """

    def __init__(
        self,
        config_or_hosts: Any = (),
        *,
        max_handshakes: int | None = None,
        channels_per_connection: int = 8,
        early: dict[str, socket.socket] | None = None,
    ) -> None:
        """`early`: sockets already connecting, by host name (gpudash.transport.early)."""
        hosts: Iterable[SshHost] = getattr(config_or_hosts, "hosts", config_or_hosts)
        if max_handshakes is None:
            max_handshakes = getattr(config_or_hosts, "max_handshakes", 16)
        self.hosts: dict[str, SshHost] = {h.name: h for h in hosts}
        self.channels_per_connection = channels_per_connection
        self.handshakes = asyncio.Semaphore(max_handshakes)
        self._transports: dict[str, SshTransport] = {}
        self._adhoc: dict[JumpSpec, SshTransport] = {}
        self._retired: list[SshTransport] = []
        self._early = dict(early or {})

    def take_early(self, name: str, options: Any) -> socket.socket | None:
        """The host's early socket when it reaches what `options` (asyncssh's resolved
        options, ~/.ssh/config applied) connect to directly; None otherwise."""
        sock = self._early.pop(name, None)
        if sock is None:
            return None
        if options.proxy_command or options.tunnel or options.local_addr:
            sock.close()
            return None
        return connected(sock, options.host, options.port)

    def transport(self, host: SshHost) -> SshTransport:
        """The transport for `host`: the same object (one connection) for the same settings."""
        current = self._transports.get(host.name)
        if current is not None and current.host == host:
            return current
        if current is not None:
            self._retired.append(current)
        self.hosts.setdefault(host.name, host)
        transport = self._transports[host.name] = SshTransport(host, pool=self)
        return transport

    def bastion(self, target: SshHost) -> SshTransport | None:
        """The shared transport of `target`'s jump host, None when it has none."""
        if not target.jump:
            return None
        named = self.hosts.get(target.jump)
        if named is not None:
            return self.transport(named)
        spec = parse_jump(target.jump, target)
        if spec not in self._adhoc:
            self._adhoc[spec] = SshTransport(spec, pool=self)
        return self._adhoc[spec]

    async def close(self) -> None:
        """Targets first, then the bastions their tunnels run through."""
        for sock in self._early.values():
            sock.close()
        self._early.clear()
        everything = [*self._transports.values(), *self._retired]
        jumps = {t.host.jump for t in everything if t.host.jump}
        targets = [t for t in everything if t.host.name not in jumps]
        bastions = [t for t in everything if t.host.name in jumps]
        await asyncio.gather(*(t.close() for t in targets))
        await asyncio.gather(*(t.close() for t in bastions))
        await asyncio.gather(*(t.close() for t in self._adhoc.values()))
