"""`gpudash tasks` and `gpudash run` end to end: the real CLI entry point against the test sshd."""

from __future__ import annotations

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
    assert main(["run", "hello", "--config", config]) == 0
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
    assert main(["run", "fails", "h0", "h1", "--config", config]) == 1
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
