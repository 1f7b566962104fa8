"""`gpudash tasks` and `gpudash run` end to end: the real CLI entry point against the test sshd."""

from __future__ import annotations

import asyncio
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudash.cli.main import main
from tests.support.sshd import FakeHost, Sshd


def write_config(sshd: Sshd, hosts: list[FakeHost], path: Path, tasks: str) -> str:
    path.write_text("".join(sshd.host_toml(h) + "\n" for h in hosts) + tasks)
    return str(path)


TASKS = """
[tasks.hello]
title = "say hello with progress"
kind = "script"
key = "H"
params = { who = "world; $(touch /tmp/gpudash-cli-pwned)" }
run = '''
printf 'hello %s\\n' "$GPUDASH_WHO"
for p in 10 50 100; do printf '\\rprogress %s%%' $p; sleep 0.05; done; echo
echo "on $GPUDASH_TEST_HOST"
'''
check = 'test -e "$HOME/hello-done"'

[tasks.fails]
title = "fail on h1 only"
kind = "script"
run = '[ "$GPUDASH_TEST_HOST" = h1 ] && { echo "failing here"; exit 9; }; echo fine'
"""


def test_run_streams_host_prefixed_lines_and_exits_0_when_all_ok(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, fake_hosts[:2], tmp_path / "c.toml", TASKS)
    (fake_hosts[1].home / "hello-done").write_text("")
    assert main(["run", "hello", "--yes", "--config", config]) == 0
    out = capsys.readouterr().out.splitlines()
    h0 = [line for line in out if line.startswith("h0 | ") and "==" not in line]
    assert h0 == [
        "h0 | hello world; $(touch /tmp/gpudash-cli-pwned)",
        "h0 | progress 100%",
        "h0 | on h0",
    ]
    assert any(line.startswith("h0 | == hello: ok (") for line in out)
    assert "h1 | == hello: skipped: already done (its check exited 0)" in out
    assert not Path("/tmp/gpudash-cli-pwned").exists()


def test_run_exits_1_when_one_host_fails_and_names_its_rc(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, fake_hosts[:2], tmp_path / "c.toml", TASKS)
    assert main(["run", "fails", "h0", "h1", "-y", "--config", config]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "h1 | failing here" in out and "h0 | fine" in out
    assert any(line.startswith("h1 | == fails: failed rc=9 (") for line in out)
    assert any(line.startswith("h0 | == fails: ok (") for line in out)


def test_tasks_on_a_host_says_what_is_done_and_what_is_to_do(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, fake_hosts[:1], tmp_path / "c.toml", TASKS)
    (fake_hosts[0].home / "hello-done").write_text("")
    assert main(["tasks", "h0", "--config", config]) == 0
    rows = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["hello"].split()[2] == "done"
    assert rows["fails"].split()[2:4] == ["no", "check"]
    assert rows["venv"].split()[2:4] == ["to", "do"]


def test_unknown_task_and_host_are_usage_errors(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, fake_hosts[:1], tmp_path / "c.toml", TASKS)
    assert main(["run", "helo", "--config", config]) == 2
    assert "unknown task 'helo' (did you mean 'hello'?)" in capsys.readouterr().err
    assert main(["run", "hello", "h9", "--config", config]) == 2
    assert "unknown host 'h9'" in capsys.readouterr().err


# --- ctrl+c: cancel what this command started, detach from what it only attached to ------------

SLOW = """
[tasks.slow]
title = "a long install someone started"
kind = "script"
run = 'echo begin; sleep 20; echo end'
"""


def _gpudash(*argv: str, stdin: int | None = None) -> subprocess.Popen[str]:
    """The real `gpudash` command in a process of its own (so a real SIGINT reaches it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "gpudash", *argv],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_until(process: subprocess.Popen[str], needle: str, timeout: float = 30.0) -> list[str]:
    """stdout lines up to and including the first one containing `needle`."""
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if needle in line:
            return lines
    raise AssertionError(f"{needle!r} never came; got {lines}")


def _job_state(sshd: Sshd, host: FakeHost, task: str) -> str:
    from gpudash.tasks import jobs
    from gpudash.transport.ssh import SshPool

    async def ask() -> str:
        pool = SshPool([])
        try:
            transport = pool.transport(sshd.host_config(host, name="h0"))
            await transport.connect()
            return (await jobs.status(transport, task)).state
        finally:
            await pool.close()

    return asyncio.run(ask())


def test_ctrl_c_detaches_from_an_attached_run_and_cancels_only_what_it_started(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path
):
    config = write_config(sshd, fake_hosts[:1], tmp_path / "c.toml", SLOW)
    owner = _gpudash("run", "slow", "h0", "--config", config)
    try:
        first = _read_until(owner, "h0 | begin")
        assert any("== slow: started; ctrl+c cancels it (run" in line for line in first)
        watcher = _gpudash("run", "slow", "h0", "--config", config)
        lines = _read_until(watcher, "attached to the run already going")
        assert "ctrl+c leaves it running" in lines[-1]
        watcher.send_signal(signal.SIGINT)
        out, err = watcher.communicate(timeout=30)
        assert watcher.returncode == 130
        assert "leaving the runs on h0 running (detached)" in err
        assert "h0 | == slow: left running on h0 (run " in out
        assert "`gpudash run --follow slow h0` follows it again" in out
        assert _job_state(sshd, fake_hosts[0], "slow") == "running"

        owner.send_signal(signal.SIGINT)
        out, err = owner.communicate(timeout=40)
        assert owner.returncode == 130
        assert "cancelling what this command started on h0" in err
        assert "h0 | == slow: cancelled" in out
        assert _job_state(sshd, fake_hosts[0], "slow") == "cancelled"
    finally:
        for process in (owner,):
            if process.poll() is None:
                process.kill()


def test_follow_attaches_without_launching_and_never_cancels(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path
):
    config = write_config(sshd, fake_hosts[:1], tmp_path / "c.toml", SLOW)
    idle = _gpudash("run", "--follow", "slow", "h0", "--config", config)
    out, _ = idle.communicate(timeout=30)
    assert idle.returncode == 1
    assert "h0 | == slow is not running" in out
    assert _job_state(sshd, fake_hosts[0], "slow") == "none"  # nothing launched

    owner = _gpudash("run", "slow", "h0", "--config", config)
    try:
        _read_until(owner, "h0 | begin")
        follower = _gpudash("run", "--follow", "slow", "h0", "--config", config)
        lines = _read_until(follower, "following the run going on the host")
        assert "ctrl+c leaves it running" in lines[-1]
        _read_until(follower, "h0 | begin")  # the log from its start
        follower.send_signal(signal.SIGINT)
        out, _ = follower.communicate(timeout=30)
        assert follower.returncode == 130 and "left running on h0" in out
        assert _job_state(sshd, fake_hosts[0], "slow") == "running"
    finally:
        owner.send_signal(signal.SIGINT)
        owner.communicate(timeout=40)


# --- a task on more than one host is confirmed first ---------------------------------------------


def test_a_run_on_several_hosts_without_a_terminal_needs_yes_and_runs_nothing(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, fake_hosts[:2], tmp_path / "c.toml", TASKS)
    assert main(["run", "hello", "--config", config]) == 2
    err = capsys.readouterr().err
    assert "it runs on 2 hosts (h0, h1): pass --yes" in err
    assert _job_state(sshd, fake_hosts[0], "hello") == "none"
    assert main(["run", "hello", "h0", "--config", config]) == 0  # one host: no question


def test_a_run_on_several_hosts_asks_on_a_terminal_listing_the_hosts(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path
):
    config = write_config(sshd, fake_hosts[:3], tmp_path / "c.toml", TASKS)
    leader, follower = pty.openpty()
    try:
        process = _gpudash("run", "hello", "--config", config, stdin=follower)
        os.write(leader, b"n\n")
        out, _ = process.communicate(timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    assert process.returncode == 1
    assert "run hello on 3 host(s): h0, h1, h2" in out
    assert "go ahead? [y/N] nothing run" in out
    assert _job_state(sshd, fake_hosts[0], "hello") == "none"
