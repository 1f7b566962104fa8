"""Faults before a session exists: each gives the affected host one clear line while every
other host is probed in full, within a bound, through `gpudash probe --json` (what a user runs).

The hosts are NetRig's (tests/support/netrig.py): each its own network namespace, address and sshd.
Mid-session faults are in test_faults_session.py, hostile output in test_faults_output.py,
server limits and jump hosts in test_faults_server.py.
"""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from tests.support.configs import host_table
from tests.support.faultprobe import assert_reason, others_fully_probed, probe_cli
from tests.support.netrig import NetRig


def needs_netns(rig: NetRig) -> None:
    if rig.mode != "netns":
        pytest.skip(f"needs network namespaces: {rig.fallback}")


def test_connection_refused(netrig: NetRig, tmp_path: Path):
    netrig.kill_sshd("h1")
    run = probe_cli(netrig, netrig.config_toml(), workdir=tmp_path)
    h1 = netrig.hosts[1]
    port = f"{h1.address}:{h1.port}"
    assert_reason(run.hosts["h1"], f"connection refused by {port}")
    others_fully_probed(run.hosts, "h1")
    assert run.returncode == 1


def test_no_route_to_host(netrig: NetRig, tmp_path: Path):
    needs_netns(netrig)
    netrig.unroute("h2")
    run = probe_cli(netrig, netrig.config_toml(connect_timeout=5), workdir=tmp_path)
    assert_reason(run.hosts["h2"], "no route to host", netrig.hosts[2].address)
    others_fully_probed(run.hosts, "h2")
    assert run.hosts["h2"]["elapsed_s"] < 3  # refused by the kernel at once, not waited out


def test_an_address_nobody_answers_arp_for_is_no_route(netrig: NetRig, tmp_path: Path):
    """On the same subnet with no such machine: ARP fails, the kernel says EHOSTUNREACH."""
    needs_netns(netrig)
    ghost = "\n" + host_table("ghost", address=netrig.spare_address, connect_timeout=8)
    run = probe_cli(netrig, netrig.config_toml() + ghost, workdir=tmp_path)
    assert_reason(run.hosts["ghost"], "no route to host", netrig.spare_address)
    others_fully_probed(run.hosts, "ghost")


def test_silent_drop_times_out_with_the_connect_timeout(netrig: NetRig, tmp_path: Path):
    netrig.cut("h3")
    config = netrig.config_toml(per_host={"h3": {"connect_timeout": 1.5}})
    run = probe_cli(netrig, config, workdir=tmp_path)
    h3 = assert_reason(run.hosts["h3"], "connect timed out after 1.5s", netrig.hosts[3].address)
    if netrig.mode == "netns":  # nothing answered (the loopback fallback's relay does accept)
        assert h3.endswith(f":{netrig.hosts[3].port})"), h3
    others_fully_probed(run.hosts, "h3")
    assert run.hosts["h3"]["elapsed_s"] < 1.5 + 2


def test_a_dns_name_that_does_not_resolve(netrig: NetRig, tmp_path: Path):
    """Run from the rig's client namespace, whose only resolver is its own loopback: the
    lookup fails on this machine and never reaches the machine's real DNS server."""
    needs_netns(netrig)
    config = netrig.config_toml(per_host={"h0": {"address": "gpu-node.gpudash.invalid"}})
    run = probe_cli(netrig, config, client_netns=True, workdir=tmp_path)
    assert_reason(run.hosts["h0"], "DNS name gpu-node.gpudash.invalid does not resolve")
    others_fully_probed(run.hosts, "h0")


def test_auth_failure_names_the_user_and_what_to_do(netrig: NetRig, tmp_path: Path):
    stranger = tmp_path / "stranger_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(stranger)
    stranger.chmod(0o600)
    config = netrig.config_toml(per_host={"h1": {"identity_file": str(stranger)}})
    run = probe_cli(netrig, config, workdir=tmp_path)
    h1 = netrig.hosts[1]
    assert_reason(run.hosts["h1"], f"auth failed as {netrig.user}@{h1.address}:{h1.port}")
    others_fully_probed(run.hosts, "h1")


def test_an_unknown_host_key_is_refused_under_strict(netrig: NetRig, tmp_path: Path):
    empty = tmp_path / "known_hosts_empty"
    empty.write_text("")
    config = netrig.config_toml(per_host={"h2": {"known_hosts": str(empty)}})
    run = probe_cli(netrig, config, workdir=tmp_path)
    h2 = netrig.hosts[2]
    assert_reason(run.hosts["h2"], "host key unknown", h2.fingerprint, "accept-new")
    others_fully_probed(run.hosts, "h2")


def test_a_changed_host_key_is_refused_with_the_new_fingerprint(netrig: NetRig, tmp_path: Path):
    h1, h2 = netrig.hosts[1], netrig.hosts[2]
    swapped = tmp_path / "known_hosts_swapped"  # h1's address filed with h2's key
    where = h1.address if h1.port == 22 else f"[{h1.address}]:{h1.port}"
    swapped.write_text(f"{where} {h2.host_key}\n")
    for policy in ("strict", "accept-new"):
        config = netrig.config_toml(
            per_host={"h1": {"known_hosts": str(swapped), "host_key_policy": policy}}
        )
        run = probe_cli(netrig, config, workdir=tmp_path)
        assert_reason(run.hosts["h1"], "host key CHANGED", h1.fingerprint, "ssh-keygen -R")
        others_fully_probed(run.hosts, "h1")


def test_a_host_that_accepts_tcp_but_never_speaks_ssh(
    netrig: NetRig, tmp_path: Path, silent_port: int
):
    mute = "\n" + host_table("mute", address="127.0.0.1", port=silent_port, connect_timeout=1.5)
    run = probe_cli(netrig, netrig.config_toml() + mute, workdir=tmp_path)
    assert_reason(run.hosts["mute"], "127.0.0.1", "1.5s", "TCP connected but no SSH greeting")
    others_fully_probed(run.hosts, "mute")
    assert run.hosts["mute"]["elapsed_s"] < 1.5 + 2


def test_an_sshd_too_slow_to_finish_the_handshake_is_told_from_a_silent_host(
    netrig: NetRig, tmp_path: Path
):
    """It greets, but key exchange and login need more round trips than connect_timeout."""
    netrig.set_link("h2", delay_ms=100)
    config = netrig.config_toml(per_host={"h2": {"connect_timeout": 0.3}})
    run = probe_cli(netrig, config, workdir=tmp_path)
    assert_reason(run.hosts["h2"], "connect timed out after 0.3s", "sshd greets")
    others_fully_probed(run.hosts, "h2")
