"""~/.ssh/config read in ssh(1)'s two passes, so the canonical name's `Host` block applies.

OpenSSH (ssh.c `main`, openssh-portable V_9_9_P2 and V_9_2_P1 alike) reads the config once for
the name as given, canonicalizes the name (sshcanon.py), then, when CanonicalizeHostname is not
`no` or a `Match final` asked for it, reads the config a second time: HostName is now the
canonical name and `Host` patterns match it, `Match canonical` and `Match final` are true,
`Match originalhost` and `%n` still see the name as given, and what the first pass set is kept
(the first value obtained wins, over both passes; IdentityFile lines add up, duplicates
dropped: readconf.c `add_identity_file`).

asyncssh 2.24.1 parses the files (its SSHClientConfig) but its second read starts from scratch
with the canonical name as if it had been typed, losing the first pass, and ran only inside
connect(), after gpudash had resolved the host from the first pass. So gpudash runs both
passes here, with two small subclasses of asyncssh's parser, and hands asyncssh the result as
`last_config` with its own canonicalization switched off. asyncssh is pinned (pyproject.toml);
these subclasses use its parser's internals, and tests/ssh/test_ssh_canonicalize.py checks the
outcome against `ssh -G` and a real `ssh`.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

import asyncssh
from asyncssh.config import SSHClientConfig
from asyncssh.pattern import WildcardPatternList

from gpudash.transport.sshcanon import (
    Canon,
    Lookup,
    canonicalize,
    mode_of,
    parse_cnames,
    parse_domains,
)

# asyncssh's own canonicalization off: the name is already canonical (or deliberately not)
_NO_ASYNCSSH_CANON: dict[str, Any] = {
    "canonicalize_hostname": False,
    "canonical_domains": [],
    "canonicalize_permitted_cnames": [],
}
_ADDS_UP = ("IdentityFile", "CertificateFile")


@dataclass(frozen=True)
class SshConfig:
    """The config asyncssh connects with (as `last_config`), and the name it connects to."""

    config: SSHClientConfig
    name: str
    lookup_s: float = 0.0  # spent resolving names: part of the host's connect_timeout


class _FirstPass(SSHClientConfig):
    """The first read, tokens left unexpanded: OpenSSH expands `%h` in IdentityFile or
    ProxyCommand with the final host name, which only the second pass knows."""

    # asyncssh declares it on each instance; one empty set for the class is all this needs
    _percent_expand: ClassVar[set[str]] = set()  # type: ignore[misc]

    def finish(self, name: str) -> None:
        """The last pass after all: connect to `name`, expand tokens as asyncssh's parse()
        does at its end (config.py, 2.24.1)."""
        self._options["Hostname"] = name
        self._set_tokens()
        for option in SSHClientConfig._percent_expand:
            value = self._options.get(option)
            if isinstance(value, list):
                self._options[option] = [self._expand_val(item) for item in value]
            elif isinstance(value, str):
                self._options[option] = self._expand_val(value)


class _FinalPass(SSHClientConfig):
    """The second read: starts from the first pass's values, HostName set to `name`."""

    def __init__(self, *args: Any) -> None:
        *base, name = args
        super().__init__(*base)
        self._name = str(name)
        self._options["Hostname"] = self._name
        for option in _ADDS_UP:  # its own list: the first pass's object is not appended to
            if isinstance(self._options.get(option), list):
                self._options[option] = list(cast("list[str]", self._options[option]))

    def _match_host(self, option: str, args: list[str]) -> None:
        """`Host` patterns match the canonical name (ssh.c hands read_config_file its `host`,
        which is canonical by the final pass); asyncssh's matches the name as given."""
        self._matching = WildcardPatternList(",".join(args)).matches(self._name)
        args.clear()

    # asyncssh declares its table on each instance; this one is the class's, as asyncssh's is
    _handlers: ClassVar[dict[str, Any]] = {  # type: ignore[misc]
        **SSHClientConfig._handlers,
        "host": ("Host", _match_host),
    }

    def finish(self) -> None:
        for option in _ADDS_UP:
            value = self._options.get(option)
            if isinstance(value, list):
                self._options[option] = list(dict.fromkeys(value))


def _load(cls: type[SSHClientConfig], last: Any, passes: tuple[bool, bool], *args: Any) -> Any:
    """One read of ~/.ssh/config, as asyncssh's options would do it (the same file, the same
    local user); runs in an executor: it reads files and may run `Match exec` commands."""
    try:
        local_user = getpass.getuser()
    except KeyError:
        raise ValueError(
            "Unknown local username: set one of LOGNAME, USER, LNAME, or USERNAME in the "
            "environment"
        ) from None
    path = Path("~", ".ssh", "config").expanduser()
    paths = [path] if os.access(path, os.R_OK) else []
    canonical, final = passes
    config = cls.load(last, paths, False, canonical, final, local_user, *args)
    config.loaded = True  # asyncssh must not read the file again on top of this
    return config


def _canon(config: Any) -> Canon:
    get = config.get
    return Canon(
        mode=mode_of(get("CanonicalizeHostname", False)),
        domains=parse_domains(get("CanonicalDomains", ()) or ()),
        max_dots=int(get("CanonicalizeMaxDots", 1)),
        fallback_local=bool(get("CanonicalizeFallbackLocal", True)),
        cnames=parse_cnames(get("CanonicalizePermittedCNAMEs", ()) or ()),
        family=int(get("AddressFamily", socket.AF_UNSPEC)),
        port=int(get("Port", 22)),
    )


async def read_ssh_config(
    address: str, *, user: str | None, port: int | None, jump: bool, timeout: float | None
) -> SshConfig:
    """~/.ssh/config for `address` (gpudash's `address`, what ssh is given on its command
    line; `user` and `port` as `-l` and `-p`). `jump`: gpudash connects through a bastion of
    its own (as `ssh -J`), which makes the connection not direct. Raises ResolveError where
    ssh(1) would stop on the name, socket.gaierror or TimeoutError from the lookups, ValueError
    (asyncssh's ConfigParseError) for a file asyncssh cannot read."""
    loop = asyncio.get_running_loop()
    args = (user or (), address, port or ())
    first = await loop.run_in_executor(None, _load, _FirstPass, None, (False, False), *args)
    canon = _canon(first)
    given = str(first.get("Hostname") or address)  # asyncssh expanded HostName's %h
    direct = not jump and first.get("ProxyCommand") is None and first.get("ProxyJump") is None
    lookup = Lookup(canon, timeout)
    name = await canonicalize(given, canon, lookup, direct=direct)
    if canon.mode == "no" and not first.has_match_final():
        # No second pass: a name ssh would only lowercase keeps its case, as before, because
        # asyncssh matches known_hosts entries case-sensitively (OpenSSH does not) and
        # gpudash's accept-new recorded names as written
        name = given if name == given.lower() else name
        first.finish(name)
        return SshConfig(first, name, lookup.spent)
    final = await loop.run_in_executor(None, _load, _FinalPass, first, (True, True), *args, name)
    final.finish()
    return SshConfig(final, name, lookup.spent)


async def connection_options(ssh_config: SshConfig, **kwargs: Any) -> Any:
    """asyncssh's options built on `ssh_config` (kwargs as for asyncssh.connect); pass them
    to connect() as `options=`, and it reads ~/.ssh/config no more.

    asyncssh takes the config to build on only from an options object (`options.config`),
    so a bare one carries it; the result is marked loaded, which is what keeps connect()
    (config=()) from reading the file again on top. ProxyJump hops still read it."""
    seed = asyncssh.SSHClientConnectionOptions.__new__(asyncssh.SSHClientConnectionOptions)
    seed.kwargs = {}
    seed.config = ssh_config.config
    options = await asyncssh.SSHClientConnectionOptions.construct(
        seed, config=(), **_NO_ASYNCSSH_CANON, **kwargs
    )
    options.config.loaded = True
    return options
