"""The one-use key leaves the destination's authorized_keys at every end of a direct copy.
Verified, failed, cancelled, re-run of a complete copy, resumed after a cut and gpudash
killed are in test_copy_direct.py; here the ends that need the host itself changed: its disk
full, the source job killed. Each checks right when `gpudash run` returned (the run ended),
not eventually. Run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import os
import signal
import subprocess
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
)
from tests.support.netrig import NetRig, RigHost


@pytest.fixture
def rig(netrig: NetRig) -> NetRig:
    if netrig.mode != "netns":
        pytest.fail(f"a direct copy needs hosts that reach each other: {netrig.fallback}")
    make_tree(netrig.hosts[0].home / "src")
    return netrig


def in_host(host: RigHost, *argv: str) -> subprocess.CompletedProcess:
    """`argv` in the host's own mount namespace (its sshd's, so its sessions'): a mount made
    from the test's namespace is not seen there."""
    assert host.proc is not None
    return subprocess.run(
        ["nsenter", "-t", str(host.proc.pid), "-m", *argv], capture_output=True, text=True
    )


def test_a_destination_disk_that_fills_up_leaves_no_key(rig: NetRig, tmp_path: Path):
    """h1's home (its authorized_keys, the job dir and the copy) on a 12 MiB filesystem:
    the 24 MiB tree fills it, and the key must still go."""
    h1 = rig.hosts[1]
    home = str(h1.home)
    mounted = in_host(h1, "mount", "-t", "tmpfs", "-o", "size=12m,mode=0755", "tmpfs", home)
    assert mounted.returncode == 0, mounted.stderr
    try:
        done = run(rig, copy_config(rig, streams=2), tmp_path, "h1")
        out = done.stdout + done.stderr
        keys = in_host(h1, "cat", f"{home}/.ssh/authorized_keys")
        assert keys.returncode == 0, keys.stderr  # the copy's line was in this file
        assert done.returncode != 0, out
        assert "No space left on device" in out, out
        assert "gpudash-copy-" not in keys.stdout, keys.stdout
        assert in_host(h1, "sh", "-c", f"ls {home}/.cache/gpudash/jobs/*/files/id").stdout == ""
    finally:
        in_host(h1, "umount", "-l", home)
    no_key_left(rig)


def test_a_destination_disk_filled_by_another_writer_leaves_no_key(rig: NetRig, tmp_path: Path):
    """Something else fills h1's disk while the copy runs (its key is in place): the copy
    fails for want of space, removing its partial copy frees nothing, and the key must still
    go, with the user's own lines as they were (a temporary copy of the file cannot be
    written on that disk)."""
    h1 = rig.hosts[1]
    home = str(h1.home)
    mounted = in_host(h1, "mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", home)
    assert mounted.returncode == 0, mounted.stderr
    try:
        user_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk0ZXJuZWwga2V5 user@laptop"
        made = f"mkdir -p -m 700 {home}/.ssh && echo '{user_key}' > {home}/.ssh/authorized_keys"
        assert in_host(h1, "sh", "-c", made).returncode == 0
        slow_tar(h1, "sleep 3")
        proc = start(rig, copy_config(rig), tmp_path, "h1")
        read_until(proc, "sending ")
        fill = f"dd if=/dev/zero of={home}/filler bs=64k 2>/dev/null; true"
        assert in_host(h1, "sh", "-c", fill).returncode == 0
        out, _ = proc.communicate(timeout=120)
        keys = in_host(h1, "cat", f"{home}/.ssh/authorized_keys")
        assert proc.returncode != 0, out
        assert "No space left on device" in out, out
        assert keys.stdout == user_key + "\n", keys.stdout
    finally:
        in_host(h1, "umount", "-l", home)
        (h1.bin_dir / "tar").unlink(missing_ok=True)
    no_key_left(rig)


def test_a_source_job_killed_midway_leaves_no_key(rig: NetRig, tmp_path: Path):
    h0, h1 = rig.hosts[0], rig.hosts[1]
    slow_tar(h1, "sleep 4")
    proc = start(rig, copy_config(rig), tmp_path, "h1")
    read_until(proc, "sending ")
    job = h0.home / ".cache" / "gpudash" / "jobs" / "copy-to-h1"
    os.killpg(int((job / "pgid").read_text()), signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out
    no_key_left(rig)
    assert not (h1.home / "dst").exists()
