"""A direct copy between namespaced hosts (tests/support/netrig.py): the bytes go h0 -> h1 over
the rig's bridge, never through gpudash, as two detached jobs, through `gpudash run copy`
(what a user runs). The one-use key must be gone from h1's authorized_keys and from h0 after
every ending: success, failure, cancel, and gpudash killed with SIGKILL.

Each host has its own HOME (sshd's SetEnv) and its own `HOME/.ssh/authorized_keys`, which the
rig's sshd reads beside the rig's shared key file. Run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncssh
import pytest

from tests.support.cli import tree_of
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


def leftovers(host: RigHost, task: str) -> list[str]:
    """Processes of the host's job `task` still running: its process group, or anything
    naming its job dir (the source's ssh sessions run in groups of their own)."""
    job = host.home / ".cache" / "gpudash" / "jobs" / task
    pgid = (job / "pgid").read_text().strip()
    ps = subprocess.run(["ps", "-eo", "stat=,pgid=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in ps.splitlines()]
    return [
        " ".join(row)
        for row in rows
        if not row[0].startswith("Z")  # dead, waiting for an init that reaps late
        and (row[1] == pgid or str(job) + "/" in row[-1])
    ]


@pytest.fixture
def rig(netrig: NetRig) -> NetRig:
    if netrig.mode != "netns":
        pytest.fail(f"a direct copy needs hosts that reach each other: {netrig.fallback}")
    make_tree(netrig.hosts[0].home / "src")
    return netrig


def logins(host: RigHost, source: RigHost) -> int:
    """Connections `source` opened to `host` (its sshd's "Accepted publickey" lines)."""
    log = (host.root / "sshd.log").read_text(errors="replace")
    return len(re.findall(rf"Accepted publickey for \S+ from {re.escape(source.address)} ", log))


def test_a_copy_opens_one_connection_per_stream_and_one_for_the_rest(rig: NetRig, tmp_path: Path):
    """The control verbs (manifest, mkdirs, seal, prepare, verify) ride the hold session's
    connection: each handshake of their own was 0.2 s on a copy's critical path."""
    src, dst = rig.hosts[0], rig.hosts[1]
    before = logins(dst, src)
    done = run(rig, copy_config(rig, streams=2), tmp_path, "h1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree_of(dst.home / "dst") == tree_of(src.home / "src")
    # the hold, then each stream's tar session and its byte-range session (chunk_mb = 4
    # sends the big files as ranges): at most 1 + 2 * 2, where each control verb dialling on
    # its own made it 10
    assert 1 + 2 <= logins(dst, src) - before <= 1 + 2 * 2


def test_a_direct_copy_arrives_verified_and_leaves_no_key(rig: NetRig, tmp_path: Path):
    done = run(rig, copy_config(rig), tmp_path, "h1")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    src, dst = rig.hosts[0].home / "src", rig.hosts[1].home / "dst"
    assert tree_of(dst) == tree_of(src)
    assert "every sha256, mode and link target matches" in out
    assert "key is removed" in out  # the destination job's own last word
    # the destination's own log (the app's log pane on that host) says where the bytes came from
    dest_log = (rig.hosts[1].home / ".cache" / "gpudash" / "jobs" / "copy" / "log").read_text()
    assert "direct copy from h0:~/src into" in dest_log.splitlines()[0], dest_log
    assert not (rig.hosts[1].home / "dst.gpudash-partial").exists()
    no_key_left(rig)
    # ended means ended: no beat, no hold session lingering on either host (a beat's `sleep`
    # held the hold session's pipe up to 2 s after the source's end, and the destination
    # waited for it)
    assert leftovers(rig.hosts[0], "copy-to-h1") == []
    assert leftovers(rig.hosts[1], "copy") == []

    again = run(rig, copy_config(rig), tmp_path, "h1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already complete" in again.stdout and "nothing copied" in again.stdout
    no_key_left(rig)


REAL_TAR = "/usr/bin/tar" if Path("/usr/bin/tar").exists() else "/bin/tar"


def slow_tar(host: RigHost, body: str) -> None:
    """A `tar` stand-in on the host's PATH: GNU tar's --version, `body` before extracting."""
    host.write_tool(
        "tar",
        f'#!/bin/sh\ncase "$1" in --version) exec {REAL_TAR} --version ;; esac\n'
        f'{body}\nexec {REAL_TAR} "$@"\n',
    )


def start(rig: NetRig, config: str, tmp: Path, *hosts: str) -> subprocess.Popen:
    return subprocess.Popen(
        gpudash(rig, config, tmp, *hosts),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp,
    )


def read_until(proc: subprocess.Popen, text: str, timeout: float = 60) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while text not in seen:
        assert time.monotonic() < deadline, seen
        line = proc.stdout.readline()
        assert line, seen
        seen += line
    return seen


def test_a_failing_destination_removes_the_key_and_the_partial_copy(rig: NetRig, tmp_path: Path):
    slow_tar(rig.hosts[1], 'echo "tar: No space left on device" >&2; exit 2')
    done = run(rig, copy_config(rig), tmp_path, "h1")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "sending failed" in out and "partial copy is removed" in out
    assert not (rig.hosts[1].home / "dst").exists()
    assert not (rig.hosts[1].home / "dst.gpudash-partial").exists()
    no_key_left(rig)


def test_cancel_stops_both_jobs_and_removes_key_and_partial(rig: NetRig, tmp_path: Path):
    slow_tar(rig.hosts[1], "sleep 60")
    proc = start(rig, copy_config(rig), tmp_path, "h1")
    read_until(proc, "sending ")
    time.sleep(1)
    proc.send_signal(signal.SIGINT)  # ctrl+c: cancel on the hosts
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert not (rig.hosts[1].home / "dst").exists()
    wait_for(lambda: not (rig.hosts[1].home / "dst.gpudash-partial").exists(), 20, "partial gone")
    no_key_left(rig)


def test_gpudash_killed_the_copy_finishes_and_removes_its_key(rig: NetRig, tmp_path: Path):
    slow_tar(rig.hosts[1], "sleep 4")
    proc = start(rig, copy_config(rig), tmp_path, "h1")
    read_until(proc, "sending ")
    proc.kill()  # SIGKILL: gpudash gets no chance to clean anything
    proc.wait(10)
    dst = rig.hosts[1].home / "dst"
    wait_for(dst.exists, 90, "the copy in place without gpudash")
    assert tree_of(dst) == tree_of(rig.hosts[0].home / "src")
    wait_for(lambda: "gpudash-copy-" not in authorized(rig.hosts[1]), 30, "key line removed")
    wait_for(lambda: not private_keys(rig.hosts[0]), 30, "private key removed")
    no_key_left(rig)


def test_a_destination_whose_host_key_changed_is_refused(rig: NetRig, tmp_path: Path):
    """gpudash connected to h1 with the key it trusts; then h1's sshd comes back with another
    key (gpudash's connection stays up): the source must refuse it."""
    h1 = rig.hosts[1]
    flag = h1.root / "key-swapped"
    h1.write_tool(
        "id", f'#!/bin/sh\nwhile [ ! -e {flag} ]; do sleep 0.1; done\nexec /usr/bin/id "$@"\n'
    )
    proc = start(rig, copy_config(rig), tmp_path, "h1")
    time.sleep(3)  # gpudash is connected, the destination job waits in `id`
    original = (h1.root / "host_ed25519").read_bytes()
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(h1.root / "host_ed25519")
    try:
        rig.restart_sshd(h1, connections=False)
        flag.touch()
        out, _ = proc.communicate(timeout=120)
    finally:  # the rig serves the next tests with the key its known_hosts holds
        (h1.root / "host_ed25519").write_bytes(original)
        rig.restart_sshd(h1, connections=False)
    assert proc.returncode == 1, out
    assert "host key is not the one gpudash trusts: refused" in out
    assert not (h1.home / "dst").exists()
    wait_for(lambda: "gpudash-copy-" not in authorized(h1), 30, "key line removed")
    no_key_left(rig)


def test_a_copy_cut_midway_resumes_with_only_what_is_missing(rig: NetRig, tmp_path: Path):
    h1 = rig.hosts[1]
    count = h1.root / "tar-count"
    # The second extracting tar waits: one stream lands, the other is mid-way at the cut. The
    # count is taken under a lock: two streams starting together both read 2 without it.
    slow_tar(
        h1,
        f'n=$(flock {count}.lock sh -c \'echo x >> "$1"; wc -l < "$1"\' - {count})\n'
        '[ "$n" -eq 2 ] && sleep 120',
    )
    config = copy_config(rig, streams=2)
    proc = start(rig, config, tmp_path, "h1")
    read_until(proc, "sending ")
    partial = h1.home / "dst.gpudash-partial"
    wait_for(lambda: partial.exists() and any(partial.rglob("f*.txt")), 30, "a stream landed")
    rig.cut(h1)
    out, _ = proc.communicate(timeout=150)
    rig.restore(h1)
    assert proc.returncode != 0, out
    assert "partial copy is kept" in out, out
    assert partial.exists()
    (h1.bin_dir / "tar").unlink()
    wait_for(lambda: "gpudash-copy-" not in authorized(h1), 30, "key line removed after the cut")
    again = run(rig, config, tmp_path, "h1", timeout=180)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "resuming: " in out and "files already there" in out
    assert tree_of(h1.home / "dst") == tree_of(rig.hosts[0].home / "src")
    no_key_left(rig)
