"""What the SSH transport reads of a host, and the ad hoc jump host `[user@]host[:port]`.

A Protocol rather than an import of gpudash.config.load.HostConfig: the transport needs nine
fields, and a bastion named only by a spec string has to stand in for a HostConfig.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class SshHost(Protocol):
    """The HostConfig fields this transport reads (gpudash.config.load.HostConfig has them all)."""

    @property
    def name(self) -> str: ...
    @property
    def address(self) -> str: ...
    @property
    def user(self) -> str | None: ...
    @property
    def port(self) -> int | None: ...
    @property
    def identity_files(self) -> tuple[str, ...]: ...
    @property
    def jump(self) -> str | None: ...
    @property
    def host_key_policy(self) -> str: ...
    @property
    def known_hosts(self) -> str | None: ...
    @property
    def connect_timeout(self) -> float: ...


@dataclass(frozen=True)
class JumpSpec:
    """A bastion given as `[user@]host[:port]`; it borrows the target's other settings."""

    name: str
    address: str
    user: str | None
    port: int | None
    identity_files: tuple[str, ...]
    host_key_policy: str
    known_hosts: str | None
    connect_timeout: float
    jump: str | None = None


def parse_jump(spec: str, target: SshHost) -> JumpSpec:
    """Raises ValueError for a port that is not a number."""
    user, _, rest = spec.rpartition("@")
    address, port = rest, None
    if rest.startswith("["):  # [v6addr]:port
        address, _, tail = rest[1:].partition("]")
        port = int(tail[1:]) if tail.startswith(":") else None
    elif rest.count(":") == 1:
        address, _, port_text = rest.partition(":")
        port = int(port_text)
    return JumpSpec(
        name=spec,
        address=address,
        user=user or None,
        port=port,
        identity_files=tuple(target.identity_files),
        host_key_policy=target.host_key_policy,
        known_hosts=target.known_hosts,
        connect_timeout=target.connect_timeout,
    )
