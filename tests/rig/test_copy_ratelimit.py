"""A direct copy whose client (gpudash) has a slow link: the bytes go host to host, so the copy
finishes at the hosts' rate, not at the client's (issue 21's "the client cannot carry the
bytes fast"). gpudash runs in the rig's client namespace, whose link `tc tbf` caps at
LIMIT MiB/s each way (tests/support/netrig_faults.py `limit_client`); the hosts' bridge
between each other is not limited. The same tree through gpudash (`via = "gpudash"`) is bound
by the cap, which shows the cap is real. Run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.rig.test_copy_direct import gpudash, no_key_left
from tests.support.cli import tree_of
from tests.support.netrig import NetRig
from tests.support.tools import require

LIMIT = 2.0  # MiB/s, each way, on gpudash's own link
BIG_MIB = 96  # direct: through gpudash this would need >= 48 s
SMALL_MIB = 16  # via gpudash: >= 8 s at the cap


def make_tree(root: Path, mib: int) -> int:
    (root / "conf").mkdir(parents=True)
    for i in range(20):
        (root / "conf" / f"c{i}.json").write_text(f'{{"i": {i}}}\n')
    for i in range(2):
        (root / f"shard-{i}.bin").write_bytes(os.urandom(mib * 1024 * 1024 // 2))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def config(rig: NetRig, path: str, to: str, via: str) -> str:
    return rig.config_toml() + (
        "\n[tasks.copy]\n"
        f'params = {{ from = "h0", path = "{path}", to = "{to}", via = "{via}",'
        " streams = 4, chunk_mb = 8 }\n"
    )


def timed(rig: NetRig, text: str, tmp: Path) -> tuple[subprocess.CompletedProcess, float, int]:
    """The CLI run from the client namespace: the result, its wall time and the bytes that
    crossed the client's link meanwhile (both directions)."""
    before = rig.client_bytes()
    t0 = time.monotonic()
    done = subprocess.run(
        rig.client_command(gpudash(rig, text, tmp, "h1")),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
    )
    return done, time.monotonic() - t0, rig.client_bytes() - before


@pytest.fixture
def slow_client(netrig_factory) -> NetRig:
    require("tc")
    rig = netrig_factory(2)
    if rig.mode != "netns":
        pytest.fail(f"a client link limit needs namespaced hosts: {rig.fallback}")
    rig.limit_client(LIMIT)
    return rig


def test_a_direct_copy_runs_at_the_hosts_rate_when_the_client_is_slow(
    slow_client: NetRig, tmp_path: Path
):
    rig = slow_client
    size = make_tree(rig.hosts[0].home / "big", BIG_MIB)
    done, took, carried = timed(rig, config(rig, "~/big", "~/big", "direct"), tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert tree_of(rig.hosts[1].home / "big") == tree_of(rig.hosts[0].home / "big")
    print(f"direct: {size / 2**20:.0f} MiB in {took:.1f} s, client link {carried / 2**20:.2f} MiB")
    # The bytes did not cross gpudash's link: a tenth of the tree would already be too much
    # (gpudash's own traffic is the jobs' launch and the log it follows: well under 1 MiB).
    assert carried < size / 10, f"{carried} bytes crossed the client's link"
    # And the time is the hosts' rate: at least 3x faster than the client's link allows.
    assert took < size / (LIMIT * 2**20) / 3, f"{took:.1f} s"
    no_key_left(rig)

    # The same kind of tree through gpudash is held to the cap (so the cap above was real).
    small = make_tree(rig.hosts[0].home / "small", SMALL_MIB)
    done, took, carried = timed(rig, config(rig, "~/small", "~/small", "gpudash"), tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert tree_of(rig.hosts[1].home / "small") == tree_of(rig.hosts[0].home / "small")
    rate = small / took / 2**20
    print(f"via gpudash: {small / 2**20:.0f} MiB in {took:.1f} s ({rate:.2f} MiB/s)")
    assert carried >= 2 * small, "via gpudash, the bytes come in and go out on its link"
    assert rate <= LIMIT * 1.1, f"{rate:.2f} MiB/s through a {LIMIT} MiB/s link"
