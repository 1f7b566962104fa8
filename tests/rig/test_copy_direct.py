"""A direct copy between namespaced hosts (tests/support/netrig.py): the bytes go h0 -> h1 over
the rig's bridge, never through gpudash, as two detached jobs, through `gpudash run copy`
(what a user runs). The one-use key must be gone from h1's authorized_keys and from h0 after
every ending: success, failure, cancel, and gpudash killed with SIGKILL.

Each host has its own HOME (sshd's SetEnv) and its own `HOME/.ssh/authorized_keys`, which the
rig's sshd reads beside the rig's shared key file. Run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncssh
import pytest

from tests.support.netrig import NetRig, RigHost

BIG = 24 * 1024 * 1024


def make_tree(root: Path, *, big: int = BIG, small: int = 200) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "bin").mkdir()
    (root / "bin" / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "bin" / "run.sh").chmod(0o755)
    (root / "link").symlink_to("a/b/f0.txt")
    for i in range(small):
        (root / "a" / "b" / f"f{i}.txt").write_text(f"small file {i}\n" * (i + 1))
    (root / "space name.txt").write_text("spaces are fine\n")
    (root / "big.bin").write_bytes(os.urandom(big))


def tree_of(root: Path) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            out[rel] = (f"dir {path.stat().st_mode & 0o777:o}", "")
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[rel] = (f"file {path.stat().st_mode & 0o777:o}", digest)
    return out


def copy_config(rig: NetRig, *, streams: int = 4, extra: str = "") -> str:
    return rig.config_toml() + (
        "\n[tasks.copy]\n"
        f'params = {{ from = "h0", path = "~/src", to = "~/dst", streams = {streams},'
        f" chunk_mb = 4{extra} }}\n"
    )


def gpudash(rig: NetRig, config: str, tmp: Path, *args: str) -> list[str]:
    path = tmp / f"c-{time.monotonic_ns()}.toml"
    path.write_text(config)
    return [sys.executable, "-m", "gpudash", "run", "copy", *args, "--yes", "--config", str(path)]


def run(rig: NetRig, config: str, tmp: Path, *hosts: str, timeout: float = 120):
    return subprocess.run(
        gpudash(rig, config, tmp, *hosts),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp,
    )


def authorized(host: RigHost) -> str:
    path = host.home / ".ssh" / "authorized_keys"
    return path.read_text() if path.exists() else ""


def private_keys(host: RigHost) -> list[Path]:
    jobs = host.home / ".cache" / "gpudash" / "jobs"
    return sorted(jobs.glob("*/files/id")) if jobs.exists() else []


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.2)


def no_key_left(rig: NetRig) -> None:
    """No gpudash copy line in any host's authorized_keys, no private key in any job dir."""
    for host in rig.hosts:
        assert "gpudash-copy-" not in authorized(host), (host.name, authorized(host))
        assert private_keys(host) == [], (host.name, private_keys(host))


@pytest.fixture
def rig(netrig: NetRig) -> NetRig:
    if netrig.mode != "netns":
        pytest.fail(f"a direct copy needs hosts that reach each other: {netrig.fallback}")
    make_tree(netrig.hosts[0].home / "src")
    return netrig


def test_a_direct_copy_arrives_verified_and_leaves_no_key(rig: NetRig, tmp_path: Path):
    done = run(rig, copy_config(rig), tmp_path, "h1")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    src, dst = rig.hosts[0].home / "src", rig.hosts[1].home / "dst"
    assert tree_of(dst) == tree_of(src)
    assert "every sha256, mode and link target matches" in out
    assert "key is removed" in out  # the destination job's own last word
    assert not (rig.hosts[1].home / "dst.gpudash-partial").exists()
    no_key_left(rig)

    again = run(rig, copy_config(rig), tmp_path, "h1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already complete" in again.stdout and "nothing copied" in again.stdout
    no_key_left(rig)
