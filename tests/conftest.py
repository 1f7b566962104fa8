"""Fixtures every test shares: isolation from the developer's machine, and a real sshd."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sshd import FakeHost, Sshd

from gpudash.transport.ssh import SshPool


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A fresh HOME with no ssh config, no agent and no gpudash config or state.

    Tests that want a config write one and set GPUDASH_CONFIG themselves.
    """
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in ("GPUDASH_CONFIG", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_ASKPASS", "DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One real /usr/sbin/sshd for the session: eight ports, eight fake hosts (tests/sshd.py)."""
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def fake_host(sshd: Sshd) -> FakeHost:
    """hosts[0] with an empty bin dir and home."""
    sshd.hosts[0].reset()
    return sshd.hosts[0]


@pytest.fixture
def fake_hosts(sshd: Sshd) -> list[FakeHost]:
    """All eight hosts, each with an empty bin dir and home."""
    for host in sshd.hosts:
        host.reset()
    return sshd.hosts


@pytest.fixture
async def ssh_pool() -> AsyncIterator[SshPool]:
    """An empty SshPool (hosts join through .transport(host)), closed after the test."""
    pool = SshPool([])
    yield pool
    await pool.close()
