"""The job dir on the host under attack (issue 20, items 4 and 7), over the real test sshd.

A secret must never exist as a file on the host, not even for the milliseconds between the
launch and the payload's start: the kernel's own list of names created in the job dir
(inotify, tests/support/inotify.py) is checked, on every exit path of the wrapper: a normal
end, a failure, `kill -9` of the wrapper, a refused sudo (the wrapper ends before the script
runs) and a launch that cannot write its files. A full filesystem (a real tmpfs, mounted by
the test: the suite runs as root) must read as the host's own "No space left on device".
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from gpudash.tasks import jobs
from gpudash.tasks.events import TaskBlocked, TaskEvent, TaskFinished, TaskOutput
from gpudash.tasks.prepare import prepare
from gpudash.tasks.runner import run_task
from gpudash.tasks.spec import TaskSpec, load_tasks
from gpudash.transport.ssh import SshPool
from tests.ssh.test_tasks_jobs import NOPW_USER, unprivileged  # noqa: F401 (a fixture)
from tests.support.inotify import Creations
from tests.support.sshd import FakeHost, Sshd

# Every name the job machinery may create in a job dir (gpudash/tasks/job_scripts.py).
JOB_FILES = {
    "lock", "log", "script.sh", "wrapper.sh", "run", "files", "wpid.tmp", "wpid",
    "pgid.tmp", "pgid", "rc.tmp", "rc", "sudo", "cancelled",
}  # fmt: skip


def secret_task(run: str, **table: object) -> TaskSpec:
    table = {"title": "uses a key", "kind": "script", "secrets": ["WANDB_API_KEY"], **table}
    return load_tasks({"t": {**table, "run": run}})["t"]


def new_key() -> str:
    return "wandbPLANTED" + uuid.uuid4().hex


async def collect(stream: AsyncIterator[TaskEvent]) -> list[TaskEvent]:
    return [event async for event in stream]


def lines_of(events: list[TaskEvent]) -> list[str]:
    return [line for e in events if isinstance(e, TaskOutput) for line in e.lines]


def files_holding(folder: Path, key: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def watched_job_dir(parent: Path, owner: str | None = None) -> tuple[Path, Creations]:
    job = parent / "t"
    job.mkdir(mode=0o700, parents=True, exist_ok=True)
    if owner is not None:
        shutil.chown(job, owner)
    return job, Creations(job)


@pytest.mark.parametrize("rc", [0, 7])
async def test_a_secret_never_exists_as_a_file_on_the_host_when_the_task_ends_or_fails(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, rc: int
):
    key = new_key()
    _job, created = watched_job_dir(fake_host.home / ".cache/gpudash/jobs")
    spec = secret_task(f'echo "key of ${{#WANDB_API_KEY}} characters"\nexit {rc}\n')
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events = await collect(run_task("h0", transport, prepare(spec, environ={"WANDB_API_KEY": key})))
    assert lines_of(events) == [f"key of {len(key)} characters"]  # it arrived
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == rc
    assert set(created.names()) <= JOB_FILES, created.names()
    assert files_holding(fake_host.home, key) == []
    created.close()


async def test_a_secret_never_exists_as_a_file_when_the_wrapper_is_killed_at_once(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    key = new_key()
    job, created = watched_job_dir(fake_host.home / ".cache/gpudash/jobs")
    prepared = prepare(secret_task("sleep 30\n"), environ={"WANDB_API_KEY": key})
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    launch = jobs.Launch("t", prepared.script, "r", secrets=prepared.secrets_env)
    await jobs.launch(transport, launch)
    os.kill(int((job / "wpid").read_text()), 9)
    os.killpg(int((job / "pgid").read_text()), 9)
    await asyncio.sleep(0.3)
    assert (await jobs.status(transport, "t")).state == "lost"
    assert set(created.names()) <= JOB_FILES, created.names()
    assert files_holding(fake_host.home, key) == []
    created.close()


async def test_a_secret_never_exists_as_a_file_when_sudo_is_refused_before_the_script(
    sshd: Sshd,
    fake_host: FakeHost,
    ssh_pool: SshPool,
    unprivileged: str,  # noqa: F811 (the fixture imported above)
):
    """The wrapper ends (rc 126) before the script that used to read and delete the secret."""
    key = new_key()
    _job, created = watched_job_dir(Path(unprivileged), owner=NOPW_USER)
    prepared = prepare(secret_task("echo ran\n", sudo=True), environ={"WANDB_API_KEY": key})
    transport = ssh_pool.transport(sshd.host_config(fake_host, user=NOPW_USER))
    events = await collect(run_task("h0", transport, prepared, root=unprivileged))
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 126
    assert set(created.names()) <= JOB_FILES, created.names()
    assert files_holding(Path(unprivileged), key) == []
    created.close()


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB tmpfs, filled to the last byte: every write to it is ENOSPC."""
    if os.geteuid() != 0:
        pytest.fail("this test mounts a tmpfs: run the suite as root (CI does)")
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mount], check=True
    )
    try:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", "-l", mount], check=False)


async def test_a_launch_on_a_full_disk_says_no_space_left_and_leaves_no_secret(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, full_tmpfs: Path
):
    """It used to be reported as "killed, out of memory, or rebooted" (an empty wrapper)."""
    key = new_key()
    prepared = prepare(secret_task("echo should not run\n"), environ={"WANDB_API_KEY": key})
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    started = asyncio.get_running_loop().time()
    events = await collect(run_task("h0", transport, prepared, root=str(full_tmpfs / "jobs")))
    assert asyncio.get_running_loop().time() - started < 5
    end = events[-1]
    assert isinstance(end, TaskBlocked), events
    assert end.reason == "cannot write the job dir on h0: No space left on device"
    assert files_holding(full_tmpfs, key) == []


async def test_a_jobs_root_that_cannot_hold_a_directory_says_the_hosts_own_error(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    (fake_host.home / "plain-file").write_text("not a directory\n")
    prepared = prepare(secret_task("echo should not run\n"), environ={})
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    root = str(fake_host.home / "plain-file" / "jobs")
    events = await collect(run_task("h0", transport, prepared, root=root))
    end = events[-1]
    assert isinstance(end, TaskBlocked)
    assert end.reason == "cannot write the job dir on h0: Not a directory"
