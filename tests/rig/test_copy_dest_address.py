"""A destination gpudash reaches one way and the source another: gpudash dials h1 through a
relay on its own loopback (as through a jump host, or a name only its ssh config resolves),
which the source host cannot dial. The source must say so, with what it tried and the two
ways out; with `params.dest_address` set to h1's address on the rig's bridge, the copy goes
host to host. Run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rig.test_copy_direct import make_tree, no_key_left, run, tree_of
from tests.support import netrelay
from tests.support.netrig import NetRig
from tests.support.sshd import free_ports


@pytest.fixture
def relayed(netrig: NetRig, tmp_path: Path) -> Iterator[tuple[NetRig, str]]:
    """The rig, h0's tree, and a config in which gpudash reaches h1 at 127.0.0.1:PORT only."""
    if netrig.mode != "netns":
        pytest.fail(f"a direct copy needs hosts that reach each other: {netrig.fallback}")
    make_tree(netrig.hosts[0].home / "src")
    h1 = netrig.hosts[1]
    port = free_ports(1)[0]
    control = tmp_path / "relay.json"
    route = {"listen": ["127.0.0.1", port], "to": [h1.address, h1.port], "listening": True}
    control.write_text(json.dumps({"gen": 1, "routes": [route]}))
    relay = subprocess.Popen([sys.executable, netrelay.__file__, str(control)])
    known = tmp_path / "known_hosts"
    known.write_text(netrig.known_hosts.read_text() + f"[127.0.0.1]:{port} {h1.host_key}\n")
    config = netrig.config_toml(
        per_host={"h1": {"address": "127.0.0.1", "port": port, "known_hosts": str(known)}}
    )
    try:
        ack = Path(f"{control}.ack")
        deadline = time.monotonic() + 10
        while not (ack.exists() and "ready" in ack.read_text()):
            assert time.monotonic() < deadline, "the relay did not start"
            time.sleep(0.05)
        yield netrig, config
    finally:
        relay.terminate()
        relay.wait(10)


def copy_config_of(config: str, extra: str) -> str:
    return config + (
        "\n[tasks.copy]\n"
        'params = { from = "h0", path = "~/src", to = "~/dst", streams = 2, chunk_mb = 4'
        f"{extra} }}\n"
    )


def test_a_destination_the_source_cannot_dial_is_named_with_the_ways_out(
    relayed: tuple[NetRig, str], tmp_path: Path
):
    rig, config = relayed
    done = run(rig, copy_config_of(config, ""), tmp_path, "h1")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    said = next((line for line in out.splitlines() if "cannot reach h1" in line), out)
    assert "this host cannot reach h1 at 127.0.0.1 port" in said, said
    assert (
        'set params.dest_address to what this host can dial (HOST or HOST:PORT), or via = "gpudash"'
        in said
    )
    no_key_left(rig)


def test_dest_address_is_what_the_source_dials(relayed: tuple[NetRig, str], tmp_path: Path):
    rig, config = relayed
    h1 = rig.hosts[1]
    extra = f', dest_address = "{h1.address}:{h1.port}"'
    done = run(rig, copy_config_of(config, extra), tmp_path, "h1")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert tree_of(h1.home / "dst") == tree_of(rig.hosts[0].home / "src")
    no_key_left(rig)
