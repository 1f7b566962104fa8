"""A task run under sudo on a host without `timeout` is still held to its limit.

The job wrapper runs as the login user; the payload runs as root (`sudo -n /bin/sh ...`)
in the process group the wrapper started. The wrapper's sh kill timer (gpudash/shlib.sh
`kill_timer`, with GD_SUDO=1 so that a signal the user may not send goes through
`sudo -n kill`) must end it at the limit. A real user with NOPASSWD sudo logs in to the test
sshd on the host without `timeout`. (The timer before the library passed this too: the
group's sudo process takes the user's own signals.)
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.tasks.events import TaskFinished
from gpudash.tasks.prepare import prepare
from gpudash.tasks.runner import run_task
from gpudash.transport.ssh import SshPool
from tests.ssh.test_tasks_jobs import collect, script_task
from tests.ssh.test_trust_probe import NO_TIMEOUT, _survivors, hostile_sshd  # noqa: F401
from tests.support.sshd import Sshd
from tests.support.tools import require

SUDOER = "gpudash-sudoer"


@pytest.fixture
def sudoer(hostile_sshd: Sshd) -> Iterator[str]:  # noqa: F811
    """A real user allowed every command by `sudo -n` (a sudoers.d rule, removed after), who
    logs in with the test key; yields a jobs root that user owns."""
    if os.geteuid() != 0:
        pytest.fail("this test creates a user: run the suite as root (CI does)")
    require("sudo")
    try:
        pwd.getpwnam(SUDOER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", SUDOER], check=True)
        subprocess.run(["usermod", "-p", "*", SUDOER], check=True)  # unlocked, no password
    folder = hostile_sshd.root  # sshd reads the key file as the user: open the way to it
    while folder != folder.parent:
        folder.chmod(folder.stat().st_mode | 0o001)
        folder = folder.parent
    (hostile_sshd.root / "authorized_keys").chmod(0o644)
    rule = Path("/etc/sudoers.d") / f"gpudash-sudoer-{uuid.uuid4().hex[:8]}"
    rule.write_text(f"{SUDOER} ALL=(ALL) NOPASSWD: ALL\n")
    rule.chmod(0o440)
    root = Path("/tmp") / f"gpudash-sudoer-{uuid.uuid4().hex[:8]}"
    root.mkdir(mode=0o700)
    shutil.chown(root, SUDOER)
    yield str(root)
    rule.unlink()
    shutil.rmtree(root, ignore_errors=True)


async def test_a_sudo_task_on_a_host_without_timeout_is_stopped_at_its_limit(
    hostile_sshd: Sshd,  # noqa: F811
    sudoer: str,
) -> None:
    host = hostile_sshd.hosts[NO_TIMEOUT]
    host.reset()
    marker = f"gd-sudo-{uuid.uuid4().hex[:12]}"
    sleeper = host.bin_dir / marker
    sleeper.symlink_to(shutil.which("sleep") or "/bin/sleep")
    # sudo resets PATH: the payload names its tool by its path
    spec = script_task(f"id -u; {sleeper} 300 & {sleeper} 301\n", timeout=2, sudo=True)
    pool = SshPool([])
    try:
        transport = pool.transport(hostile_sshd.host_config(host, user=SUDOER))
        run = collect(run_task("h0", transport, prepare(spec), root=sudoer))
        # bounded here: a timer that missed the group would leave the task its 300 s
        events = await asyncio.wait_for(run, 60)
    finally:
        await pool.close()
    end = events[-1]
    assert isinstance(end, TaskFinished), events
    assert (end.rc, end.timed_out) == (124, True), events
    assert end.elapsed_s < 30
    # What the payload's shell started may outlive it: sudo with `use_pty` (Debian's default)
    # runs the command in a session of its own, beyond the group the timer signals, and
    # relays the TERM to the command alone (the same holds under `timeout`). Not asserted;
    # cleaned up here.
    _survivors(marker, within=0)
