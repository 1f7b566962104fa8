"""A fan-out over namespaced hosts (tests/support/netrig.py): `gpudash run copy h1 h2 h3 h4`
feeds one chain h0 -> h1 -> h2 -> h3 -> h4, and every destination ends verified against the
source's manifest, even when one of them drops off the network mid-way (the hosts after it
are completed from the source). Run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.rig.test_copy_direct import (
    copy_config,
    make_tree,
    no_key_left,
    read_until,
    run,
    slow_tar,
    start,
    wait_for,
)
from tests.rig.test_copy_resume import link_bytes
from tests.support.cli import tree_of
from tests.support.netrig import NetRig

BIG = 48 * 1024 * 1024
REAL_DD = shutil.which("dd") or "/bin/dd"


@pytest.fixture
def rig5(netrig_factory) -> NetRig:
    rig = netrig_factory(5)
    if rig.mode != "netns":
        pytest.fail(f"a fan-out needs hosts that reach each other: {rig.fallback}")
    make_tree(rig.hosts[0].home / "src", big=BIG)
    return rig


def test_a_fanout_feeds_every_destination_through_one_chain(rig5: NetRig, tmp_path: Path):
    """The source's link carries the tree once, each middle hop's once in and once out, the
    last one's once in: the link counters say no destination was fed twice or from the
    source directly (four copies from the source would be 4x on its link)."""
    before = {h.name: link_bytes(rig5, h) for h in rig5.hosts}
    done = run(rig5, copy_config(rig5), tmp_path, "h1", "h2", "h3", "h4", timeout=240)
    carried = {h.name: link_bytes(rig5, h) - before[h.name] for h in rig5.hosts}
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "chain: this host -> h1 -> h2 -> h3 -> h4" in out
    src = tree_of(rig5.hosts[0].home / "src")
    for host in rig5.hosts[1:]:
        assert tree_of(host.home / "dst") == src, host.name
    # the chain carried everything: each destination's own run found nothing missing
    assert out.count("every file is there; verifying") == 4, out
    size = sum(p.stat().st_size for p in (rig5.hosts[0].home / "src").rglob("*") if p.is_file())
    times = {name: n / size for name, n in carried.items()}
    assert 1.0 < times["h0"] < 1.3, times
    for name in ("h1", "h2", "h3"):
        assert 2.0 < times[name] < 2.6, times
    assert 1.0 < times["h4"] < 1.3, times
    no_key_left(rig5)


def test_a_rerun_of_a_complete_fanout_ends_at_once_on_every_destination(
    rig5: NetRig, tmp_path: Path
):
    """Each destination already complete says `done` before its hold session is in (recv.sh
    then refuses the hold: the copy is finished); its job ends on that, not 120 s later with
    the key left in until then and gpudash waiting 30 s for it."""
    config = copy_config(rig5)
    first = run(rig5, config, tmp_path, "h1", "h2", "h3", "h4", timeout=240)
    assert first.returncode == 0, first.stdout + first.stderr
    again = run(rig5, config, tmp_path, "h1", "h2", "h3", "h4", timeout=240)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert out.count("already complete: ") == 4, out
    assert "its job is still running" not in out, out
    for host in rig5.hosts[1:]:
        assert f"{host.name} | {host.name} (destination): gpudash: " in out, out
    assert out.count("is in place and verified; the copy's key is removed") == 4, out
    no_key_left(rig5)


def test_a_destination_gpudash_cannot_reach_costs_only_itself(rig5: NetRig, tmp_path: Path):
    """Every host's handshake is made at once: one that gpudash cannot reach fails alone,
    with its reason, and the chain feeds the others past it."""
    h2 = rig5.hosts[2]
    rig5.unroute(h2)
    try:
        done = run(rig5, copy_config(rig5), tmp_path, "h1", "h2", "h3", "h4", timeout=240)
    finally:
        rig5.restore(h2)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "chain: this host -> h1 -> h3 -> h4" in out, out
    assert "h2 | h2: cannot reach h2: " in out, out
    src = tree_of(rig5.hosts[0].home / "src")
    for i in (1, 3, 4):
        assert tree_of(rig5.hosts[i].home / "dst") == src, (i, out)
        assert f"h{i} | == copy: ok" in out, out
    assert not (h2.home / "dst").exists()
    no_key_left(rig5)


def test_a_destination_lost_midway_costs_only_itself(rig5: NetRig, tmp_path: Path):
    h2, h3 = rig5.hosts[2], rig5.hosts[3]
    # h4, the chain's end, extracts and writes slowly: the whole chain moves at its pace, so
    # h2 can be cut while the bytes are still flowing through it (h3 already has some)
    slow_tar(rig5.hosts[4], "sleep 4")
    rig5.hosts[4].write_tool("dd", f'#!/bin/sh\nsleep 2\nexec {REAL_DD} "$@"\n')
    proc = start(rig5, copy_config(rig5), tmp_path, "h1", "h2", "h3", "h4")
    read_until(proc, "chain: this host", timeout=90)
    partial = h3.home / "dst.gpudash-partial"
    wait_for(lambda: partial.exists() and any(partial.rglob("*")), 60, "the chain reached h3")
    rig5.cut(h2)
    cut = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=240)
    finally:
        rig5.restore(h2)
    # a dead hop costs one timeout, not one per stream and byte range: the chain's pass ends
    # and every destination's own run is done well within two minutes of the cut
    assert time.monotonic() - cut < 120, out
    assert proc.returncode == 1, out
    src = tree_of(rig5.hosts[0].home / "src")
    for i in (1, 3, 4):
        assert tree_of(rig5.hosts[i].home / "dst") == src, (i, out)
    assert not (h2.home / "dst").exists()
    # each destination's own verdict: the lost one fails, the others are verified
    for host in ("h1", "h3", "h4"):
        assert f"{host} | == copy: ok" in out, out
    assert "h2 | == copy: failed" in out, out
    # h3, after h2, had part of the tree from the chain and is completed from the source
    assert any(ln.startswith("h3 | resuming: ") for ln in out.splitlines()), out
    wait_for(
        lambda: "gpudash-copy-" not in (h2.home / ".ssh" / "authorized_keys").read_text(),
        60,
        "h2's key line removed once its source went silent",
    )
    wait_for(
        lambda: not list((h2.home / ".cache/gpudash/jobs").glob("*/files/id")),
        60,
        "h2's forwarding key removed",
    )
    no_key_left(rig5)
