"""The fault rig itself (tests/netrig.py): hosts with their own addresses, faults that undo,
and nothing left on the machine afterwards. The fault suite relies on each of these."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import netrig_net
import pytest
from netrig import NetRig

from gpudash.config import load_config

ROOT = Path(__file__).resolve().parent.parent


def probe_json(rig: NetRig, config: Path, *args: str, timeout: float = 60) -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "gpudash", "probe", "--json", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )
    assert run.returncode in (0, 1), run.stderr
    return {h["name"]: h for h in json.loads(run.stdout)["hosts"]}


def leftovers(run: str, workdir: Path) -> list[str]:
    """Anything of rig `run` still on the machine: namespaces, links, processes."""
    found = [n for n in netrig_net.ip("netns", "list").split() if n.startswith(f"gd{run}")]
    found += [ln for ln in netrig_net.ip("-o", "link").splitlines() if f"gd{run}" in ln]
    ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    found += [ln for ln in ps.splitlines() if str(workdir) in ln]
    return found


def test_each_host_has_its_own_address_sshd_and_host_key_and_all_answer(
    netrig: NetRig, tmp_path: Path
):
    config = tmp_path / "c.toml"
    config.write_text(netrig.config_toml())
    assert len({h.address for h in netrig.hosts}) == len(netrig.hosts) == 4
    assert len({h.fingerprint for h in netrig.hosts}) == 4
    if netrig.mode == "netns":
        for host in netrig.hosts:
            where = netrig_net.ip("netns", "identify", str(host.proc.pid)).strip()
            assert where == host.netns
    hosts = probe_json(netrig, config)
    assert {n: h["state"] for n, h in hosts.items()} == {f"h{i}": "ready" for i in range(4)}
    gpus = hosts["h2"]["sections"]["gpus"]["data"]["gpus"]
    assert [g["name"] for g in gpus] == ["NVIDIA H200"]


def test_config_toml_is_a_valid_gpudash_config_with_overrides(netrig: NetRig, tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text(
        netrig.config_toml(
            only=["h0", "h3"], per_host={"h3": {"probe_timeout": 7}}, connect_timeout=2
        )
    )
    config = load_config(str(path))
    assert [h.name for h in config.hosts] == ["h0", "h3"]
    assert config.hosts[1].probe_timeout == 7
    assert {h.connect_timeout for h in config.hosts} == {2}
    assert config.hosts[0].address == netrig.hosts[0].address


def test_a_closed_rig_leaves_nothing_behind(tmp_path: Path):
    rig = NetRig(2, tmp_path).up()
    rig.cut(0)
    rig.set_link(1, delay_ms=20)
    if rig.mode == "netns":
        rig.unroute(1)
    run = rig.run
    assert leftovers(run, tmp_path)
    rig.close()
    assert leftovers(run, tmp_path) == []
    assert "10.213.0.11" not in netrig_net.ip("route", "show")
    assert not (netrig_net.REGISTRY / f"{run}.json").exists()
    assert [h.proc.poll() is not None for h in rig.hosts] == [True, True]


def test_a_rig_whose_owner_died_is_removed_by_the_next_one(tmp_path: Path):
    code = (
        "import sys, os; sys.path.insert(0, 'tests');"
        "from netrig import NetRig; r = NetRig(1, sys.argv[1]).up();"
        "print(r.run, flush=True); os._exit(0)"  # no atexit, no teardown: a killed run
    )
    dead = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "dead")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )
    run = dead.stdout.split()[-1]
    assert leftovers(run, tmp_path / "dead")
    with NetRig(1, tmp_path / "next"):
        assert leftovers(run, tmp_path / "dead") == []


def test_the_loopback_fallback_says_so_and_still_cuts_kills_and_delays(
    netrig_factory: Callable[..., NetRig], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("GPUDASH_NETRIG", "loopback")
    with pytest.warns(UserWarning, match="namespaces unavailable"):
        rig = netrig_factory(3)
    assert rig.mode == "loopback" and [h.address for h in rig.hosts][:2] == [
        "127.0.0.10",
        "127.0.0.11",
    ]
    rig.cut(1)
    rig.kill_sshd(2)
    rig.set_link(0, delay_ms=100)
    config = tmp_path / "c.toml"
    config.write_text(rig.config_toml(connect_timeout=1.5))
    hosts = probe_json(rig, config)
    assert hosts["h0"]["state"] == "ready"
    assert "timed out" in hosts["h1"]["error"]
    assert "refused" in hosts["h2"]["error"]
    rig.reset()
    assert all(h["state"] == "ready" for h in probe_json(rig, config).values())
