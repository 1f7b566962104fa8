"""Host-key policy: strict, accept-new (trust on first use) and insecure.

asyncssh raises the same `HostKeyNotVerifiable` for a host it has never seen and for a host
whose key changed, yet the two call for opposite advice (accept it / suspect an attack). So
gpudash reads the known_hosts files itself, hands asyncssh the parsed result, and answers
asyncssh's `validate_host_public_key` callback, which runs only for a key those files do not
trust: no entry for the host means unknown, any entry means changed.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from gpudash.files import MiB, read_text

POLICIES = ("strict", "accept-new", "insecure")
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
KNOWN_HOSTS_LIMIT = 64 * MiB  # ~100 bytes a line: 600k hosts


@dataclass(frozen=True)
class Refusal:
    """Why a host key was refused: `changed` is True when the host had a different key."""

    changed: bool
    hostport: str
    fingerprint: str
    known_hosts: str
    port: int
    host: str

    def reason(self) -> str:
        if self.known_hosts in ("", os.devnull):  # `UserKnownHostsFile /dev/null` or none
            what = "CHANGED" if self.changed else "unknown"
            return (
                f"host key {what} for {self.hostport} ({self.fingerprint}): no known_hosts "
                f"file keeps keys for it (UserKnownHostsFile is "
                f'{self.known_hosts or "none"}); set known_hosts = "~/.ssh/known_hosts" '
                f'for this host, or host_key_policy = "accept-new"'
            )
        if self.changed:
            return (
                f"host key CHANGED for {self.hostport}: it now presents {self.fingerprint}, "
                f"possible man-in-the-middle; if the host was reinstalled, remove the old key "
                f"with: ssh-keygen -R '{self.hostport}' -f {self.known_hosts}"
            )
        port = f"-p {self.port} " if self.port != 22 else ""
        return (
            f"host key unknown for {self.hostport} ({self.fingerprint}); to trust it pass "
            f"--accept-new-host-key (gpudash probe/check/run), set "
            f'host_key_policy = "accept-new", or run: ssh-keyscan {port}{self.host} '
            f">> {self.known_hosts}"
        )


def hostport(host: str, port: int) -> str:
    """The name OpenSSH files a key under: `host` on port 22, `[host]:port` elsewhere."""
    return host if port == 22 else f"[{host}]:{port}"


def append_known_host(path: Path, host: str, port: int, key: asyncssh.SSHKey) -> None:
    """Append one OpenSSH-format line, creating the file 0600 in a 0700 directory."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = f"{hostport(host, port)} {key.export_public_key().decode().strip()}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as out:
        out.write(line)


class HostKeyCheck:
    """One connection attempt's view of the known_hosts files and of the key it was shown."""

    def __init__(self, policy: str, known_hosts: str | None) -> None:
        if policy not in POLICIES:
            choices = ", ".join(f'"{p}"' for p in POLICIES)
            raise ValueError(f'host_key_policy "{policy}" is not one of {choices}')
        self.policy = policy
        self._explicit = known_hosts
        self.files: list[Path] = []
        self.refusal: Refusal | None = None
        self.recorded: str | None = None
        self._pending: tuple[str, int, asyncssh.SSHKey] | None = None
        self._known: asyncssh.SSHKnownHosts | None = None
        self._alias: str | None = None  # ssh_config's HostKeyAlias
        self._none = False

    @property
    def record_file(self) -> Path:
        """Where accept-new writes: the first known_hosts file in use."""
        return self.files[0] if self.files else Path(DEFAULT_KNOWN_HOSTS).expanduser()

    def configure(self, ssh_config: Any, tokens: Mapping[str, str] | None = None) -> None:
        """Pick the files: the host's `known_hosts`, else ssh_config's, else the default.

        ssh_config's file names get OpenSSH's `%` tokens and `${VAR}`s expanded (`tokens`,
        from `known_hosts_tokens`); asyncssh leaves them literal, which read no file and then
        told the user to append to `%d/.ssh/kh_%u`. `none` names no file, as in OpenSSH."""
        if self._explicit:
            names = [self._explicit]
        else:
            get = getattr(ssh_config, "get", lambda _key, default: default)
            user = get("UserKnownHostsFile", None)  # asyncssh reads `none` as []
            self._none = user is not None and not user
            user = [DEFAULT_KNOWN_HOSTS] if user is None else list(user)
            names = [*user, *(get("GlobalKnownHostsFile", ()) or [])]
            names = [expand_tokens(n, tokens or {}) for n in names if n.lower() != "none"]
        self.files = [Path(n).expanduser() for n in names]
        self._known = _parsed(tuple(self.files))
        alias = getattr(ssh_config, "get", lambda _key, default: default)("HostKeyAlias", None)
        self._alias = str(alias) if alias else None

    def asyncssh_known_hosts(self) -> asyncssh.SSHKnownHosts | None:
        """The `known_hosts=` argument: None turns verification off (insecure)."""
        if self.policy == "insecure":
            return None
        assert self._known is not None, "configure() first"
        return _ByName(self._known, self._alias)

    def client_factory(self) -> _Client:
        return _Client(self)

    def validate(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        """Called by asyncssh for a key the files do not trust."""
        assert self._known is not None
        if self._alias:  # asyncssh passes the alias as `host`; OpenSSH files it portless
            host, port = self._alias, 22
        trusted = self._known.match(host, "", None if port == 22 else port)[0]  # as _ByName
        if not trusted and self.policy == "accept-new":
            self._pending = (host, port, key)
            return True
        self.refusal = Refusal(
            changed=bool(trusted),
            hostport=hostport(host, port),
            fingerprint=f"{_kind(key)} {key.get_fingerprint()}",
            known_hosts="" if self._none else str(self.record_file),
            port=port,
            host=host,
        )
        return False

    def commit(self) -> None:
        """Record an accepted new key once the key exchange proved the server holds it."""
        if self._pending is None:
            return
        host, port, key = self._pending
        self._pending = None
        append_known_host(self.record_file, host, port, key)
        self.recorded = f"recorded {hostport(host, port)} {key.get_fingerprint()}"


# OpenSSH's tokens for UserKnownHostsFile, as ssh_config(5) (OpenSSH 9.2p1, "TOKENS") lists
# them: %%, %C, %d, %h, %i, %k, %L, %l, %n, %p, %r, %u; checked against `ssh -G` 9.2p1
# (tests/ssh/test_ssh_config_semantics.py). `${VAR}` is the environment (OpenSSH >= 8.4).
_TOKEN = re.compile(r"%(.)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def known_hosts_tokens(
    *, original: str, host: str, port: int, user: str | None, alias: str | None = None
) -> dict[str, str]:
    """The values of OpenSSH's tokens for one connection: `original` is the name as given
    (gpudash's `address`), `host` the HostName it resolved to."""
    local = socket.gethostname()
    local_user = _local_user()
    remote_user = user or local_user
    return {
        "%": "%",
        "C": hashlib.sha1(f"{local}{host}{port}{remote_user}".encode()).hexdigest(),
        "d": os.path.expanduser("~"),
        "h": host,
        "i": str(os.getuid()),
        "k": alias or original,
        "L": local.split(".", 1)[0],
        "l": local,
        "n": original,
        "p": str(port),
        "r": remote_user,
        "u": local_user,
    }


def expand_tokens(value: str, tokens: Mapping[str, str]) -> str:
    """`value` with `%x` tokens and `${VAR}` expanded; an unknown token or unset variable
    stays as written (the file then matches nothing, as a typo would)."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return tokens.get(match.group(1), match.group(0))
        return os.environ.get(match.group(2), match.group(0))

    return _TOKEN.sub(one, value)


def _local_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


class _ByName(asyncssh.SSHKnownHosts):
    """The known_hosts entries matched by the host's name only, never by the address it
    resolved to: OpenSSH trusts a key for the name it was asked to reach (or HostKeyAlias),
    and an entry for the IP alone (`[127.0.0.1]:2210`) leaves a host reached by name unknown
    (ssh(1) 9.2p1: "Host key verification failed" under StrictHostKeyChecking; CheckHostIP,
    off by default since 8.5, only warns about the IP entry). asyncssh matches either, so a
    host named `gpu8` was trusted through any entry for its address. A host given as an
    address is its own name and still matches its `[addr]:port` entry.

    A HostKeyAlias is looked up as written, without the port (ssh(1) 9.2p1: `HostKeyAlias
    127.0.0.1` matches a `127.0.0.1` line, not `[127.0.0.1]:2210`); asyncssh adds the port."""

    def __init__(self, known: asyncssh.SSHKnownHosts, alias: str | None = None) -> None:
        super().__init__()
        self._by_name = known
        self._alias = alias

    def match(self, host: str, addr: str, port: int | None) -> Any:
        if self._alias:
            return self._by_name.match(self._alias, "", None)
        return self._by_name.match(host, "", port)  # "": asyncssh then reads host as the IP


class _Client(asyncssh.SSHClient):
    def __init__(self, check: HostKeyCheck) -> None:
        self._check = check

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        return self._check.validate(host, addr, port, key)


def _kind(key: asyncssh.SSHKey) -> str:
    alg = key.get_algorithm()
    return alg.removeprefix("ssh-").upper() if alg.startswith("ssh-") else alg


_PARSED: dict[tuple[tuple[str, int, int], ...], asyncssh.SSHKnownHosts] = {}


def _parsed(files: tuple[Path, ...]) -> asyncssh.SSHKnownHosts:
    """The files parsed once per process while they are unchanged, shared by every
    connection: parsing them per host cost O(hosts × lines) time and memory (1000 hosts
    with a 1000-line known_hosts held a million key objects, about 1 GB)."""
    key = tuple((str(f), *_stamp(f)) for f in files)
    if key not in _PARSED:
        if len(_PARSED) >= 8:  # files that changed (accept-new appends): drop the oldest
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = asyncssh.import_known_hosts("".join(_read(f) for f in files))
    return _PARSED[key]


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


def _read(path: Path) -> str:
    """One known_hosts file's text; a FIFO, a device or a huge file (ssh_config's
    UserKnownHostsFile can name anything) is a RefusedFile naming it, never a hang.
    `/dev/null` is the common idiom for "keep no keys" and reads as empty, as in OpenSSH."""
    if str(path) == os.devnull:
        return ""
    try:
        text = read_text(path, limit=KNOWN_HOSTS_LIMIT)
    except FileNotFoundError:
        return ""
    return text if text.endswith("\n") or not text else text + "\n"
