"""Server-side limits and jump hosts: MaxSessions 1, MaxStartups, a bastion that fails.

The limits are OpenSSH's own, set in the host's sshd_config (NetRig.sshd_options), which is
why these run against a real sshd and not an in-process server.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.config.model import HostConfig
from gpudash.transport.ssh import SshPool
from tests.support.configs import host_table
from tests.support.faultprobe import (
    assert_fully_probed,
    assert_reason,
    others_fully_probed,
    probe_cli,
)
from tests.support.netrig import NetRig
from tests.support.sshd import run_script


def host_config(rig: NetRig, index: int, **overrides: object) -> HostConfig:
    h = rig.hosts[index]
    settings: dict = {
        "name": h.name,
        "address": h.address,
        "port": h.port,
        "user": rig.user,
        "identity_files": (str(rig.client_key),),
        "known_hosts": str(rig.known_hosts),
        "connect_timeout": 5.0,
        **overrides,
    }
    return HostConfig(**settings)


def test_max_sessions_1_the_probe_still_runs(netrig: NetRig, tmp_path: Path):
    netrig.sshd_options("h1", "MaxSessions 1")
    run = probe_cli(netrig, netrig.config_toml(), workdir=tmp_path)
    others_fully_probed(run.hosts)


async def test_max_sessions_1_a_second_command_waits_for_the_first(netrig: NetRig):
    """The app checks a task while a probe runs: two channels on one connection. With
    MaxSessions 1 the second open is refused by sshd; it must run once the first is done."""
    netrig.sshd_options("h1", "MaxSessions 1")
    async with asyncio.timeout(20):
        pool = SshPool([])
        try:
            transport = pool.transport(host_config(netrig, 1))
            first = asyncio.create_task(run_script(transport, "sleep 2; echo first"))
            await asyncio.sleep(0.5)  # the first holds the only session
            second = await run_script(transport, "echo second")
            assert second == (b"second\n", 0)
            assert await first == (b"first\n", 0)
        finally:
            await pool.close()


def test_max_startups_drops_parallel_handshakes_and_every_host_still_answers(
    netrig: NetRig, tmp_path: Path
):
    """Six gpudash hosts are one sshd that takes a single unauthenticated connection at a
    time (MaxStartups 1): sshd drops the rest during the handshake. Retrying those is
    gpudash's job; none may end up failed."""
    netrig.sshd_options("h1", "MaxStartups 1")
    h1 = netrig.hosts[1]
    keys = {
        "address": h1.address,
        "port": h1.port,
        "user": netrig.user,
        "identity_file": str(netrig.client_key),
        "known_hosts": str(netrig.known_hosts),
        "network_targets": ["http://127.0.0.1:9/"],
    }
    aliases = "".join("\n" + host_table(f"h1{c}", **keys) for c in "abcde")
    run = probe_cli(netrig, netrig.config_toml() + aliases, workdir=tmp_path, timeout=60)
    others_fully_probed(run.hosts)


def test_a_jump_host_that_fails_names_the_bastion_on_its_targets(netrig: NetRig, tmp_path: Path):
    config = netrig.config_toml(per_host={"h2": {"jump": "h1"}, "h3": {"jump": "h1"}})
    ok = probe_cli(netrig, config, workdir=tmp_path)
    others_fully_probed(ok.hosts)  # through the bastion, first
    netrig.kill_sshd("h1")
    run = probe_cli(netrig, config, workdir=tmp_path)
    assert_reason(run.hosts["h1"], "connection refused")
    for target in ("h2", "h3"):
        assert_reason(run.hosts[target], f"{target}: via jump h1: connection refused")
    assert_fully_probed(run.hosts["h0"])


def test_a_bastion_that_cannot_reach_its_target(netrig: NetRig, tmp_path: Path):
    """h1 answers, but h2 behind it is cut off: the connect through the tunnel times out."""
    netrig.cut("h2")
    config = netrig.config_toml(per_host={"h2": {"jump": "h1", "connect_timeout": 2}})
    run = probe_cli(netrig, config, workdir=tmp_path)
    assert_reason(run.hosts["h2"], "timed out")
    others_fully_probed(run.hosts, "h2")
    assert run.hosts["h2"]["elapsed_s"] < 2 + 2


def test_max_sessions_0_is_a_clear_refusal_not_a_wait(netrig: NetRig, tmp_path: Path):
    netrig.sshd_options("h2", "MaxSessions 0")  # logins work, sessions are refused
    run = probe_cli(netrig, netrig.config_toml(), workdir=tmp_path)
    assert_reason(run.hosts["h2"], "cannot open a session channel", "MaxSessions")
    others_fully_probed(run.hosts, "h2")


@pytest.fixture
def hang_up_port() -> Iterator[int]:
    """A loopback port that accepts each connection and closes it at once (what sshd does
    past MaxStartups, or a TCP wrapper)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                server.accept()[0].close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_a_server_that_always_hangs_up_is_retried_then_named(
    netrig: NetRig, tmp_path: Path, hang_up_port: int
):
    extra = "\n" + host_table("closer", address="127.0.0.1", port=hang_up_port, connect_timeout=3)
    run = probe_cli(netrig, netrig.config_toml() + extra, workdir=tmp_path)
    assert_reason(run.hosts["closer"], "closed by the server before login", "MaxStartups")
    others_fully_probed(run.hosts, "closer")
    assert run.hosts["closer"]["elapsed_s"] < 3 + 2
