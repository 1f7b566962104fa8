"""A direct copy cut hard at about half, resumed: the destination's link goes down for 2 s,
every process of the copy there is killed with SIGKILL, and gpudash itself too. The next run
must send only what is missing (byte ranges of big files included), judged by the bytes the
destination's link carried, and still verify every byte. Run only under
`flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from tests.rig.test_copy_direct import (
    no_key_left,
    read_until,
    run,
    start,
    tree_of,
    wait_for,
)
from tests.support.netrig import NetRig, RigHost

BIG = 12 * 1024 * 1024


def make_tree(root: Path) -> int:
    """Four 12 MiB files (sent as 4 MiB ranges) and fifty small ones; the tree's bytes."""
    (root / "small").mkdir(parents=True)
    for i in range(4):
        (root / f"shard{i}.bin").write_bytes(os.urandom(BIG))
    for i in range(50):
        (root / "small" / f"f{i}.txt").write_text(f"small {i}\n" * 40)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def landed(root: Path) -> int:
    """Bytes really written under root (a range written at an offset leaves a hole)."""
    if not root.exists():
        return 0
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def link_bytes(rig: NetRig, host: RigHost) -> int:
    stats = Path(f"/sys/class/net/gd{rig.run}v{host.index}/statistics")
    return sum(int((stats / f"{d}_bytes").read_text()) for d in ("rx", "tx"))


def kill_copy_processes(host: RigHost) -> None:
    """SIGKILL every process of the copy on the host: its job's group, and every receiving
    end (each holds the job's data.lock open)."""
    job = host.home / ".cache" / "gpudash" / "jobs" / "copy"
    groups = {int((job / "pgid").read_text())}
    lock = str(job / "data.lock")
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) == lock:
                groups.add(os.getpgid(int(fd.parts[2])))
        except OSError:
            continue
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


@pytest.fixture
def rig(netrig: NetRig) -> NetRig:
    if netrig.mode != "netns":
        pytest.fail(f"a direct copy needs hosts that reach each other: {netrig.fallback}")
    return netrig


def test_a_hard_cut_at_half_resumes_with_less_than_60_percent_sent_again(
    rig: NetRig, tmp_path: Path
):
    h0, h1 = rig.hosts[0], rig.hosts[1]
    total = make_tree(h0.home / "src")
    config = rig.config_toml() + (
        "\n[tasks.copy]\n"
        'params = { from = "h0", path = "~/src", to = "~/dst", streams = 4, chunk_mb = 4 }\n'
    )
    rig.limit_host(h1, 8)  # ~6 s for the whole tree: the cut lands mid-way
    try:
        proc = start(rig, config, tmp_path, "h1")
        read_until(proc, "sending ")
        partial = h1.home / "dst.gpudash-partial"
        wait_for(lambda: landed(partial) >= total * 0.45, 60, "half of the tree landed")
        rig.cut(h1)
        kill_copy_processes(h1)
        proc.kill()
        proc.wait(10)
        time.sleep(2)
        rig.restore(h1)
        source_job = h0.home / ".cache" / "gpudash" / "jobs" / "copy-to-h1"
        wait_for(lambda: (source_job / "rc").exists(), 90, "the cut source job ended")
        before = landed(partial)
        assert total * 0.3 < before < total, (before, total)
        sent = link_bytes(rig, h1)
        again = run(rig, config, tmp_path, "h1", timeout=240)
        sent = link_bytes(rig, h1) - sent
    finally:
        rig.limit_host(h1, None)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "resuming: " in out and "of byte ranges already there" in out, out
    assert tree_of(h1.home / "dst") == tree_of(h0.home / "src")
    assert "every sha256, mode and link target matches" in out
    assert sent < total * 0.6, f"sent {sent / total:.0%} of the tree again"
    no_key_left(rig)
