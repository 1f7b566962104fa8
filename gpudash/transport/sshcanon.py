"""Hostname canonicalization as ssh(1) does it: CanonicalizeHostname, CanonicalDomains,
CanonicalizeMaxDots, CanonicalizeFallbackLocal and CanonicalizePermittedCNAMEs.

A port of OpenSSH's ssh.c `resolve_canonicalize`, `check_follow_cname` and the CNAME lookup in
`main` (openssh-portable tag V_9_9_P2, github.com/openssh/openssh-portable/blob/V_9_9_P2/ssh.c;
the same code in V_9_2_P1, the `ssh` the tests compare with, except that 9.2 treats an
explicit `ProxyJump none` as a jump: fixed by commit c8eb3941, first in V_9_4_P1), with
match.c `match_pattern_list` and misc.c `valid_domain`. ssh_config(5) documents the options.

Why not asyncssh's own (connection.py `_canonicalize_host`, 2.24.1): it canonicalizes names that
a ProxyJump or ProxyCommand will resolve under `yes` (OpenSSH only under `always`), looks
`host.domain` up without the anchoring dot (so the resolver's search list applies), never
follows a CNAME for a name it did not canonicalize, and gpudash read ~/.ssh/config before it
ran, so the canonical name's `Host` block never applied ("connection refused by gpu8:22").

Lookups run off the event loop, each bounded by what is left of the host's connect_timeout.
They run in daemon threads of their own, not in asyncio's default executor: a lookup the
resolver never answers keeps its thread for the resolver's own timeout (30 s with
`options timeout:30`), and asyncio.run() waits for the default executor's threads before the
command may exit (measured: the failure line at 2 s, the exit at 30 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_LOOKUP_THREADS = threading.BoundedSemaphore(32)  # lookups at once, process-wide


class ResolveError(Exception):
    """Where ssh(1) gives up on the name (fatal in resolve_canonicalize) or on the settings
    (a config error in readconf.c); str() is the whole reason."""


@dataclass(frozen=True)
class Canon:
    """The canonicalization settings of the first pass over ~/.ssh/config."""

    mode: str = "no"  # "no", "yes" or "always" (CanonicalizeHostname)
    domains: tuple[str, ...] = ()  # CanonicalDomains, lowercased as readconf.c does
    max_dots: int = 1  # CanonicalizeMaxDots (readconf.c default)
    fallback_local: bool = True  # CanonicalizeFallbackLocal (readconf.c default)
    cnames: tuple[tuple[str, str], ...] = ()  # CanonicalizePermittedCNAMEs as (from, to)
    family: int = socket.AF_UNSPEC  # AddressFamily
    port: int = 22


def mode_of(value: object) -> str:
    """asyncssh stores CanonicalizeHostname as False, True or "always"."""
    if value == "always":
        return "always"
    return "yes" if value is True else "no"


def parse_cnames(rules: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """readconf.c oCanonicalizePermittedCNAMEs: `*` or `from_list:to_list` (lowercased);
    asyncssh already turned a lone `none` into []."""
    pairs = []
    for rule in rules:
        if rule == "*":
            pairs.append(("*", "*"))
            continue
        source, colon, target = rule.lower().partition(":")
        if not colon or not target:
            raise ResolveError(f'~/.ssh/config: invalid CanonicalizePermittedCNAMEs "{rule}"')
        pairs.append((source, target))
    return tuple(pairs)


def parse_domains(domains: Sequence[str]) -> tuple[str, ...]:
    """readconf.c oCanonicalDomains: each a valid domain, lowercased."""
    for domain in domains:
        why = domain_problem(domain)
        if why:
            raise ResolveError(f"~/.ssh/config: CanonicalDomains: {why}")
    return tuple(d.lower() for d in domains)


def domain_problem(name: str) -> str | None:
    """misc.c valid_domain: None for a usable name, else why not."""
    if not name:
        return "empty domain name"
    if not name[0].isascii() or not name[0].isalnum():
        return f'domain name "{name}" starts with invalid character'
    if ".." in name:
        return f'domain name "{name}" contains consecutive separators'
    if re.fullmatch(r"[A-Za-z0-9._-]+", name) is None:
        return f'domain name "{name}" contains invalid characters'
    return None


def match_pattern_list(string: str, patterns: str) -> int:
    """match.c match_pattern_list(string, patterns, dolower=1): 1 for a positive match, -1 when
    a negated sub-pattern matches, 0 for none. `*` and `?` are the only wildcards."""
    positive = 0
    for sub in patterns.split(","):
        negated = sub.startswith("!")
        sub = (sub[1:] if negated else sub).lower()  # dolower: the pattern, not the string
        regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in sub)
        if re.fullmatch(regex, string, re.DOTALL):
            if negated:
                return -1
            positive = 1
    return positive


def is_addr_fast(name: str) -> bool:
    """ssh.c is_addr_fast: a name that can only be an address."""
    return "%" in name or ":" in name or all(c in "0123456789." for c in name)


def numeric_address(name: str, canon: Canon) -> str | None:
    """ssh.c resolve_addr: the canonical text of a name that is exactly one numeric address
    (AI_NUMERICHOST: no lookup, so it runs inline)."""
    try:
        infos = socket.getaddrinfo(
            name,
            canon.port,
            canon.family,
            socket.SOCK_STREAM,
            0,
            socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
        )
    except (OSError, ValueError):  # not an address; ValueError: IDNA, an embedded NUL
        return None
    if len(infos) != 1:
        return None
    try:
        return socket.getnameinfo(infos[0][4], socket.NI_NUMERICHOST)[0]
    except OSError:
        return None


def follow_cname(name: str, cname: str, canon: Canon, *, direct: bool) -> str:
    """ssh.c check_follow_cname: `cname` when a CanonicalizePermittedCNAMEs rule allows
    replacing `name` by it, else `name`."""
    if not cname or not canon.cnames or name == cname or canon.mode == "no":
        return name
    if not direct and canon.mode != "always":  # a proxy or jump host resolves it
        return name
    for source, target in canon.cnames:
        if match_pattern_list(name, source) == 1 and match_pattern_list(cname, target) == 1:
            return cname
    return name


class Lookup:
    """getaddrinfo(AI_CANONNAME) off the event loop, within one deadline for all lookups."""

    def __init__(self, canon: Canon, timeout: float | None) -> None:
        self.canon = canon
        self.timeout = timeout
        self.spent = 0.0  # seconds in lookups, taken out of the connect budget
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + timeout if timeout else None

    async def canonname(self, name: str) -> str:
        """The resolver's canonical name for `name` ("" when it gives none or a bad one);
        raises socket.gaierror when `name` does not resolve, TimeoutError past the deadline."""
        loop = asyncio.get_running_loop()
        left = None if self._deadline is None else max(self._deadline - loop.time(), 0.01)
        call = getaddrinfo_daemon(
            name,
            self.canon.port,
            family=self.canon.family,
            type=socket.SOCK_STREAM,
            flags=socket.AI_CANONNAME,
        )
        started = loop.time()
        try:
            infos = await asyncio.wait_for(call, left)
        except asyncio.TimeoutError:
            raise asyncio.TimeoutError(f"resolving {name} did not finish") from None
        finally:
            self.spent += loop.time() - started
        cname = infos[0][3] if infos else ""
        if not cname or domain_problem(cname):  # ssh.c resolve_host ignores a bad CNAME
            return ""
        return cname[:-1] if cname.endswith(".") else cname  # valid_domain drops the dot


def getaddrinfo_daemon(*args: Any, **kwargs: Any) -> asyncio.Future[Any]:
    """socket.getaddrinfo in a daemon thread; the future gets its result or its exception.
    A caller that stopped waiting (timed out, cancelled) leaves the thread to finish alone."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        result, error = None, None
        with _LOOKUP_THREADS:
            try:
                result = socket.getaddrinfo(*args, **kwargs)
            except Exception as exc:  # handed to the awaiting task
                error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="gpudash-getaddrinfo", daemon=True).start()
    return future


async def canonicalize(name: str, canon: Canon, lookup: Lookup, *, direct: bool) -> str:
    """The name ssh(1) connects to and reads the config again with (ssh.c `main`: the
    resolve_canonicalize call, then the CNAME-only lookup). `name` is HostName (with %h
    expanded) or the name as given; `direct`: no ProxyCommand, ProxyJump or gpudash jump."""
    was_addr = is_addr_fast(name) or numeric_address(name, canon) is not None  # is_addr
    if not was_addr:
        name = name.lower()
    found = False
    if canon.mode != "no" or was_addr:
        name, found = await _resolve_canonicalize(name, canon, lookup, direct=direct)
    # CNAME following for a name not canonicalized above: the system resolver's usual rules
    if not found and canon.cnames and (direct or canon.mode == "always"):
        try:
            cname = await lookup.canonname(name)
        except (socket.gaierror, UnicodeError):
            if direct:  # ssh exits 255 ("Could not resolve hostname"); as connecting would
                raise
        else:
            name = follow_cname(name, cname, canon, direct=direct)
    return name


async def _resolve_canonicalize(
    name: str, canon: Canon, lookup: Lookup, *, direct: bool
) -> tuple[str, bool]:
    """ssh.c resolve_canonicalize: (the name, whether it resolved here)."""
    address = numeric_address(name, canon)
    if address is not None:
        return address, True
    if is_addr_fast(name):  # looks like an address but is not one: leave it to connect
        return name, False
    if canon.mode == "no":
        return name, False
    if not direct and canon.mode != "always":
        return name, False
    if name.endswith("."):  # anchored: resolve it as it is
        candidates = [name]
    elif name.count(".") > canon.max_dots:  # sufficiently qualified already
        return name, False
    else:
        candidates = []
        for domain in canon.domains:
            if domain == "none":
                break
            candidates.append(f"{name}.{domain}.")
    for full in candidates:
        try:
            cname = await lookup.canonname(full)
        except (socket.gaierror, UnicodeError):
            continue
        full = full[:-1]  # drop the anchoring dot
        return follow_cname(full, cname, canon, direct=direct), True
    if not canon.fallback_local:
        tried = ", ".join(c[:-1] for c in candidates) or "no CanonicalDomains"
        raise ResolveError(
            f'could not resolve host "{name}" (tried {tried}; CanonicalizeFallbackLocal no)'
        )
    return name, False
