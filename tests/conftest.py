"""Fixtures every test shares: isolation from the developer's machine, and a real sshd."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpudash.transport.ssh import SshPool
from tests.support.netrig import NetRig
from tests.support.sshd import FakeHost, Sshd


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
    """One real /usr/sbin/sshd for the session: eight ports, eight fake hosts (support/sshd.py)."""
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


@pytest.fixture(scope="session")
def netrig_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetRig]:
    """Four hosts with their own addresses and sshds (tests/support/netrig.py), for the session.

    Namespaces when this machine allows them; otherwise 127.0.0.x aliases, with a
    NetRigFallback warning saying why.
    """
    with NetRig(4, tmp_path_factory.mktemp("netrig")) as rig:
        yield rig


@pytest.fixture
def netrig(netrig_session: NetRig) -> NetRig:
    """The session's NetRig with every fault undone and every host's files fresh."""
    netrig_session.reset()
    return netrig_session


@pytest.fixture
def netrig_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., NetRig]]:
    """Make a NetRig of any size (`netrig_factory(20)`); all are torn down after the test."""
    rigs: list[NetRig] = []

    def make(n: int, **kwargs: object) -> NetRig:
        rig = NetRig(n, tmp_path_factory.mktemp("netrig"), **kwargs).up()
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        rig.close()


@dataclass
class SilentListener:
    port: int
    accepted: list[socket.socket]
    """The connections it accepted, held open."""


@contextlib.contextmanager
def silent_listener(address: str = "127.0.0.1", port: int = 0) -> Iterator[SilentListener]:
    """A listener that accepts TCP and never speaks."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, port))
    server.listen(16)
    server.settimeout(0.2)
    listener = SilentListener(server.getsockname()[1], [])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                listener.accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        stop.set()
        thread.join()
        for conn in listener.accepted:
            conn.close()
        server.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback listener that accepts TCP and never speaks SSH: an 'unreachable' host."""
    with silent_listener() as listener:
        yield listener.port


_TIERS = ("unit", "perf", "ssh", "app", "rig")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test carries its tier's marker (its folder), so `-m unit` and `-m 'not rig'` work."""
    for item in items:
        tier = next((t for t in _TIERS if f"/tests/{t}/" in str(item.path)), None)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
