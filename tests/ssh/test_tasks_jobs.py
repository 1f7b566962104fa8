"""Tasks over the real test sshd (support/sshd.py): detached jobs, re-attach, cancel, sudo, quoting.

No mocks: every job runs under the real OpenSSH server as a detached `setsid` job with its
flock, and the checks read the host's own files and `ps`.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import stat
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gpudash.tasks import job_scripts, jobs
from gpudash.tasks.events import (
    TaskCancelled,
    TaskEvent,
    TaskFinished,
    TaskLost,
    TaskOutput,
    TaskSkipped,
    TaskStarted,
)
from gpudash.tasks.fleet_run import run_on_host
from gpudash.tasks.prepare import prepare
from gpudash.tasks.runner import run_task
from gpudash.tasks.spec import TaskSpec, load_tasks
from gpudash.transport.ssh import SshPool
from tests.support.sshd import FakeHost, Sshd
from tests.support.wheels import LOCAL_PYTHON, make_wheel, uv_path


def script_task(run: str, **table: object) -> TaskSpec:
    specs = load_tasks({"t": {"title": "test task", "kind": "script", "run": run, **table}})
    return specs["t"]


async def collect(stream: AsyncIterator[TaskEvent]) -> list[TaskEvent]:
    return [event async for event in stream]


def lines_of(events: list[TaskEvent]) -> list[str]:
    return [line for e in events if isinstance(e, TaskOutput) for line in e.lines]


def host_ps() -> str:
    return subprocess.run(["ps", "-eo", "pid,pgid,args"], capture_output=True, text=True).stdout


async def test_a_param_with_shell_syntax_arrives_as_literal_text(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    pwned = tmp_path / "pwned"
    nasty = f'\'; rm -rf ~ # $(touch {pwned}) `touch {pwned}` "$HOME"'
    (fake_host.home / "keep").write_text("still here")
    spec = script_task('printf "%s\\n" "$GPUDASH_NASTY"', params={"nasty": nasty})
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events = await collect(run_task("h0", transport, prepare(spec)))
    assert lines_of(events) == [nasty]
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 0
    assert not pwned.exists()
    assert (fake_host.home / "keep").read_text() == "still here"


async def test_progress_redraws_stream_live_and_collapse_to_the_last_state(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    body = (
        'echo "downloading"\n'
        "i=0; while [ $i -le 20 ]; do printf '\\r%3d%% |%s' $((i * 5)) x; i=$((i + 1));"
        " sleep 0.05; done\n"
        'printf "\\n"; echo "done"\n'
    )
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events = await collect(run_task("h0", transport, prepare(script_task(body))))
    outputs = [e for e in events if isinstance(e, TaskOutput)]
    partials = [e.partial for e in outputs if e.partial]
    assert len(partials) >= 3, "progress arrived in one lump, not live"
    assert all(p.endswith("% |x") for p in partials)
    assert lines_of(events) == ["downloading", "100% |x", "done"]
    started = next(e for e in events if isinstance(e, TaskStarted))
    finished = events[-1]
    assert isinstance(finished, TaskFinished) and finished.rc == 0
    assert finished.elapsed_s >= 1.0 and started.started > 0


async def test_a_dropped_connection_loses_no_line_and_doubles_none(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    body = 'i=1; while [ $i -le 40 ]; do echo "line $i"; i=$((i + 1)); sleep 0.05; done; exit 3\n'
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events: list[TaskEvent] = []
    killed = 0
    async for event in run_task("h0", transport, prepare(script_task(body)), reconnect_for=30):
        events.append(event)
        if not killed and len(lines_of(events)) >= 5:
            killed = sshd.kill_connections()
    assert killed >= 1
    assert lines_of(events) == [f"line {i}" for i in range(1, 41)]
    offsets = [e.offset for e in events if isinstance(e, TaskOutput)]
    assert offsets == sorted(offsets)
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 3
    log = (fake_host.home / ".cache/gpudash/jobs/t/log").read_text()
    assert log.splitlines() == [f"line {i}" for i in range(1, 41)]


async def test_a_restarted_sshd_does_not_stop_the_job(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    body = "sleep 1; echo after; exit 5\n"
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    job = jobs.Launch("t", prepare(script_task(body)).script, "r1")
    launched = await jobs.launch(transport, job)
    assert not launched.busy
    sshd.restart()
    await asyncio.sleep(1.5)
    status = await jobs.status(transport, "t")
    assert (status.state, status.rc, status.run) == ("finished", 5, "r1")
    assert await jobs.fetch(transport, "t", 0) == b"after\n"


async def test_a_second_launch_attaches_to_the_run_already_going(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    body = "echo one; sleep 1; echo two; exit 4\n"
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    prepared = prepare(script_task(body))
    first = asyncio.ensure_future(collect(run_task("h0", transport, prepared)))
    await asyncio.sleep(0.5)
    second = await collect(run_task("h0", transport, prepared))
    starts = [e for e in second if isinstance(e, TaskStarted)]
    assert starts and starts[0].attached
    assert lines_of(second) == ["one", "two"]
    assert isinstance(second[-1], TaskFinished) and second[-1].rc == 4
    events = await first
    assert lines_of(events) == ["one", "two"]
    assert not next(e for e in events if isinstance(e, TaskStarted)).attached
    assert (fake_host.home / ".cache/gpudash/jobs/t/log").read_text() == "one\ntwo\n"


async def test_cancel_stops_the_whole_process_group_and_leaves_nothing_behind(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    marker = 300000 + uuid.uuid4().int % 99999  # a sleep length no other process uses
    body = (
        f"sleep {marker} &\n"
        f"sh -c 'trap \"\" TERM; sleep {marker + 1}' &\n"  # ignores TERM: needs the KILL
        "echo started\n"
        "wait\n"
    )
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    cancel = asyncio.Event()
    events: list[TaskEvent] = []
    async for event in run_task(
        "h0", transport, prepare(script_task(body)), cancel=cancel, cancel_grace=1
    ):
        events.append(event)
        if "started" in lines_of(events) and not cancel.is_set():
            assert f"sleep {marker}" in host_ps()
            cancel.set()
    assert isinstance(events[-1], TaskCancelled)
    ps = host_ps()
    assert f"sleep {marker}" not in ps and f"sleep {marker + 1}" not in ps
    assert "wrapper.sh" not in "\n".join(
        line for line in ps.splitlines() if str(fake_host.home) in line
    )
    status = await jobs.status(transport, "t")
    assert (status.state, status.reason) == ("cancelled", "cancelled")


async def test_a_failing_task_reports_its_rc_and_keeps_both_logs(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    spec = script_task("echo about to fail; echo oops >&2; exit 7\n")
    events = await collect(run_task("h0", transport, prepare(spec)))
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 7 and not events[-1].ok
    assert lines_of(events) == ["about to fail", "oops"]
    started = next(e for e in events if isinstance(e, TaskStarted))
    local = Path(started.log_path)
    assert local.parent.parent == Path(os.environ["XDG_STATE_HOME"]) / "gpudash" / "logs"
    assert local.parent.name == "h0" and local.name.startswith("t-")
    assert stat.S_IMODE(local.stat().st_mode) == 0o600
    assert stat.S_IMODE(local.parent.stat().st_mode) == 0o700
    assert local.read_text().splitlines()[:3] == ["about to fail", "oops", "# gpudash: rc 7"]
    assert (fake_host.home / ".cache/gpudash/jobs/t/log").read_text() == "about to fail\noops\n"


async def test_a_timeout_is_enforced_on_the_host(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    spec = script_task("echo going; sleep 30\n", timeout=1)
    events = await collect(run_task("h0", transport, prepare(spec)))
    end = events[-1]
    assert isinstance(end, TaskFinished) and (end.rc, end.timed_out) == (124, True)
    assert end.elapsed_s < 10


async def test_attach_ends_at_the_rc_even_while_the_wrappers_pid_still_looks_alive(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    """Where init reaps orphans late (seen in a sandbox: seconds), the dead wrapper stays a
    zombie that `kill -0` finds alive. Here its pid is a process that lives on after rc is
    written: attaching must still end with the whole log, not wait for that pid."""
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    await collect(run_task("h0", transport, prepare(script_task("echo one; echo two\n"))))
    job = fake_host.home / ".cache/gpudash/jobs/t"
    lingering = subprocess.Popen(["sleep", "60"])
    try:
        (job / "wpid").write_text(f"{lingering.pid}\n")
        (job / "rc").unlink()  # the run as it was a moment before its wrapper wrote rc
        stream = jobs.attach(transport, "t", 0)
        first = await asyncio.wait_for(anext(stream), 10)
        (job / "rc").write_text("0\n")
        async with asyncio.timeout(5):  # the old attach waited for the pid: 60 s
            rest = [chunk async for chunk in stream]
        assert first + b"".join(rest) == b"one\ntwo\n"
    finally:
        lingering.kill()
        lingering.wait()


async def test_a_waited_for_line_is_answered_as_it_is_written_and_an_end_ends_the_wait(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    """What a copy waits on before its source starts (the destination's ready line) and after
    it ended (the destination job's end): each one round trip that answers once the host
    sees it, not after a fixed wait; a run that ends without the line ends the wait too."""
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    body = "echo one; sleep 0.4; echo 'ready here'; sleep 1.2\n"
    await jobs.launch(transport, jobs.Launch("t", prepare(script_task(body)).script, "r"))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    log = await jobs.wait_line(transport, "t", "ready ", 20)
    assert log == b"one\nready here\n"
    assert 0.3 < loop.time() - t0 < 1.2
    status = await jobs.wait_end(transport, "t", 20)
    assert (status.done, status.rc) == (True, 0)
    assert 1.3 < loop.time() - t0 < 3.5

    await jobs.launch(transport, jobs.Launch("t", prepare(script_task("echo no\n")).script, "s"))
    t0 = loop.time()
    assert await jobs.wait_line(transport, "t", "ready ", 20) == b"no\n"
    assert loop.time() - t0 < 3
    await jobs.launch(transport, jobs.Launch("t", prepare(script_task("sleep 30\n")).script, "u"))
    status = await jobs.wait_end(transport, "t", 0.5)  # gave up: not done, still running
    assert (status.done, status.state) == (False, "running")
    job = fake_host.home / ".cache/gpudash/jobs/t"
    os.kill(int((job / "wpid").read_text()), 9)
    os.killpg(int((job / "pgid").read_text()), 9)
    t0 = loop.time()
    status = await jobs.wait_end(transport, "t", 20)  # no rc will come: its lock is free
    assert (status.done, status.state) == (True, "lost")
    assert await jobs.wait_line(transport, "t", "ready ", 20) == b""
    assert loop.time() - t0 < 3


async def test_a_killed_wrapper_is_reported_lost(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    await jobs.launch(transport, jobs.Launch("t", prepare(script_task("sleep 30\n")).script, "r"))
    job = fake_host.home / ".cache/gpudash/jobs/t"
    os.kill(int((job / "wpid").read_text()), 9)
    os.killpg(int((job / "pgid").read_text()), 9)
    await asyncio.sleep(0.3)
    status = await jobs.status(transport, "t")
    assert (status.state, status.rc) == ("lost", None)
    jobs_found = await jobs.list_jobs(transport)
    assert [(j.task, j.state) for j in jobs_found] == [("t", "lost")]


async def test_a_secret_reaches_the_task_but_never_a_log_or_a_file(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    token = "hf_" + uuid.uuid4().hex + "ABCDEFGH"
    spec = script_task(
        'echo "token is $HF_TOKEN"; echo "other hf_$(printf %032d 7)"; '
        'test -e "$GPUDASH_JOB/secret.env" && echo "secret file still there"; exit 0\n',
        secrets=["HF_TOKEN"],
    )
    prepared = prepare(spec, environ={"HF_TOKEN": token})
    assert token not in prepared.script and token not in prepared.shown
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events = await collect(run_task("h0", transport, prepared))
    assert lines_of(events) == ["token is ********", "other hf_********"]
    started = next(e for e in events if isinstance(e, TaskStarted))
    assert token not in Path(started.log_path).read_text()
    job = fake_host.home / ".cache/gpudash/jobs/t"
    assert not (job / "secret.env").exists()
    for path in job.rglob("*"):
        if path.is_file() and path.name != "log":
            assert token not in path.read_text(errors="replace"), path


async def test_a_check_that_passes_skips_the_task(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    (fake_host.home / "done-marker").write_text("")
    spec = script_task("echo should not run\n", check='test -e "$HOME/done-marker"')
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events = await collect(run_task("h0", transport, prepare(spec)))
    assert isinstance(events[-1], TaskSkipped)
    assert not (fake_host.home / ".cache/gpudash/jobs/t").exists()


# --- a real uv venv and a real install -----------------------------------------------------------


def _tiny_wheel(where: Path) -> Path:
    """A throwaway package as a wheel in a folder of its own (`--find-links`)."""
    wheel = make_wheel(
        where / "wheels",
        "gpudash-tinypkg",
        "0.1",
        {"gpudash_tinypkg/__init__.py": "VALUE = 'tiny and real'\n"},
    )
    return wheel.parent


async def test_a_real_uv_venv_and_a_real_install_into_it(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    (fake_host.bin_dir / "uv").symlink_to(uv_path())
    wheels = _tiny_wheel(tmp_path)
    specs = load_tasks(
        {
            "venv": {"params": {"path": "~/venvs/t", "python": ""}, "env": LOCAL_PYTHON},
            "tiny": {
                "title": "install the tiny package",
                "kind": "pip",
                "needs": ["venv"],
                "params": {
                    "venv": "~/venvs/t",
                    "packages": ["gpudash-tinypkg==0.1"],
                    "find_links": str(wheels),
                    "no_index": True,
                },
                "env": {"UV_OFFLINE": "1"},
            },
        }
    )  # fmt: skip
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events = await collect(run_on_host(sshd.host_config(fake_host), transport, specs, ["tiny"]))
    ends = {e.task: e for e in events if isinstance(e, (TaskFinished, TaskSkipped, TaskLost))}
    assert isinstance(ends["uv"], TaskSkipped)  # uv is on the host's PATH already
    assert isinstance(ends["venv"], TaskFinished) and ends["venv"].rc == 0, lines_of(events)
    assert isinstance(ends["tiny"], TaskFinished) and ends["tiny"].rc == 0, lines_of(events)
    assert ends["tiny"].affects == ("env",)
    process = await transport.start(
        '"$HOME/venvs/t/bin/python" -c "import gpudash_tinypkg as t, sys; print(t.VALUE,'
        ' sys.prefix)"\n'
    )
    out = b"".join([c async for c in process.chunks()]).decode()
    assert await process.wait() == 0
    await process.close()
    assert out == f"tiny and real {fake_host.home}/venvs/t\n"
    again = await collect(run_on_host(sshd.host_config(fake_host), transport, specs, ["tiny"]))
    assert [type(e).__name__ for e in again if not isinstance(e, TaskOutput)][-1] == "TaskSkipped"


# --- sudo without NOPASSWD, as a real unprivileged user ----------------------------------------

NOPW_USER = "gpudash-nopw"


@pytest.fixture
def unprivileged(sshd: Sshd, tmp_path: Path) -> str:
    """A real user with no sudo rights who can log in to the test sshd with the test key.

    sshd reads AuthorizedKeysFile as the user, so the directories above it are opened for
    traversal (o+x, not o+r) and the key file made readable; the job root is a directory the
    user owns (its HOME under the fake host is root's)."""
    if os.geteuid() != 0:
        pytest.fail("this test creates a user: run the suite as root (CI does)")
    try:
        pwd.getpwnam(NOPW_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", NOPW_USER], check=True)
        subprocess.run(["usermod", "-p", "*", NOPW_USER], check=True)  # unlocked, no password
    folder = sshd.root
    while folder != folder.parent:
        folder.chmod(folder.stat().st_mode | 0o001)
        folder = folder.parent
    (sshd.root / "authorized_keys").chmod(0o644)
    root = Path("/tmp") / f"gpudash-nopw-{uuid.uuid4().hex[:8]}"
    root.mkdir(mode=0o700)
    shutil.chown(root, NOPW_USER)
    yield str(root)
    shutil.rmtree(root, ignore_errors=True)


async def test_sudo_without_nopasswd_fails_fast_with_a_clear_message(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, unprivileged: str
):
    host = sshd.host_config(fake_host, user=NOPW_USER)
    transport = ssh_pool.transport(host)
    spec = script_task("id -u; echo ran as root\n", sudo=True)
    started = asyncio.get_running_loop().time()
    events = await collect(run_task("h0", transport, prepare(spec), root=unprivileged))
    assert asyncio.get_running_loop().time() - started < 10
    end = events[-1]
    assert isinstance(end, TaskFinished) and end.rc == 126
    if shutil.which("sudo"):
        assert lines_of(events) == [f"gpudash: {job_scripts.SUDO_PASSWORD_MESSAGE}"]
    else:
        assert lines_of(events) == [f"gpudash: {job_scripts.SUDO_MISSING_MESSAGE}"]


async def test_sudo_as_root_runs_directly(sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool):
    if os.geteuid() != 0:
        pytest.fail("run the suite as root (CI does)")
    transport = ssh_pool.transport(sshd.host_config(fake_host))
    events = await collect(run_task("h0", transport, prepare(script_task("id -u\n", sudo=True))))
    assert lines_of(events) == ["0"]
    assert not isinstance(events[-1], TaskLost)
