"""`gpudash stop TASK HOST...` end to end over the real test sshd: a detached run stopped, the
service group a finished job left running stopped, and the GPU memory check, with the real
CLI entry point and real processes (checked in the machine's own /proc)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from gpudash.cli.main import main
from gpudash.probe.serve import parse_state
from tests.support.sshd import FakeHost, Sshd
from tests.unit.test_serve_state import READY

READY_STATE = parse_state("svc", json.dumps(READY))

TASKS = """
[tasks.long]
title = "a long sleep"
kind = "script"
run = 'echo begin; sleep 1000'

[tasks.svc]
title = "leave a service running"
kind = "script"
run = '''
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
i=0
while [ $i -lt 50 ]; do
    g=$(ps -o pgid= -p $! 2>/dev/null | tr -d ' ')
    [ -n "$g" ] && [ "$g" = "$!" ] && break
    sleep 0.1; i=$((i + 1))
done
echo $! > "$GPUDASH_JOB/service.pgid"
echo "service $!"
'''
"""


def write_config(sshd: Sshd, hosts: list[FakeHost], path: Path) -> str:
    path.write_text("".join(sshd.host_toml(h) + "\n" for h in hosts) + TASKS)
    return str(path)


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process of group `pgid` is left, from /proc."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def wait_for(predicate, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.05)


def job_dir(host: FakeHost, task: str) -> Path:
    return host.home / ".cache/gpudash/jobs" / task


def test_stop_ends_a_running_script_task_and_its_whole_group(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, fake_hosts[:2], tmp_path / "c.toml")
    main(["run", "long", "h0", "h1", "-y", "--config", config, "--follow"])  # nothing yet
    capsys.readouterr()
    for host in fake_hosts[:2]:
        _launch_detached(sshd, host, config)
    pgids = {}
    for host in fake_hosts[:2]:
        wait_for(lambda h=host: (job_dir(h, "long") / "pgid").is_file())
        pgids[host.name] = int((job_dir(host, "long") / "pgid").read_text())
        wait_for(lambda g=pgids[host.name]: group_alive(g))
    assert main(["stop", "long", "h0", "h1", "--grace", "2", "--config", config]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    for line in out:
        assert "== long: run stopped (cancelled rc=" in line
        assert "GPU memory not checked: no nvidia-smi on the host" in line
    for pgid in pgids.values():
        assert not group_alive(pgid)
    for host in fake_hosts[:2]:
        assert (job_dir(host, "long") / "rc").read_text().split()[1] == "cancelled"


def _launch_detached(sshd: Sshd, host: FakeHost, config: str) -> None:
    """Start `long` on `host` and leave it running: `run` in a process of its own, killed
    once the job is launched (a detached run outlives the command that started it)."""
    import signal
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "gpudash", "run", "long", host.name, "--config", config],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.rstrip().endswith("| begin"):
            break
    process.send_signal(signal.SIGKILL)  # gone without a word: the job keeps running
    process.wait()


def test_stop_ends_the_service_a_finished_job_left_running(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, [fake_host], tmp_path / "c.toml")
    assert main(["run", "svc", "h0", "--config", config]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "| service " in x)
    pgid = int(line.rsplit(" ", 1)[1])
    record = job_dir(fake_host, "svc") / "service.pgid"
    assert record.read_text().strip() == str(pgid) and group_alive(pgid)
    state = fake_host.home / ".cache/gpudash/serve/svc.json"  # as the serve supervisor leaves it
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({**READY, "task": "svc", "pid": pgid, "pgid": pgid}))
    assert main(["stop", "svc", "h0", "--grace", "2", "--config", config]) == 0
    said = capsys.readouterr().out.strip()
    assert said.startswith("h0 | == svc: ")
    assert f"service group {pgid} (1 process) stopped" in said
    assert "run stopped" not in said  # the job itself had finished
    assert not group_alive(pgid)
    assert not record.exists()
    # the probe then reads a stop, not an engine that died
    stopped = parse_state("svc", state.read_text())
    assert (stopped.state, stopped.pid, stopped.ready) == ("stopped", pgid, READY_STATE.ready)
    assert stopped.updated is not None and stopped.updated > READY["updated"]
    assert state.stat().st_mode & 0o777 == 0o600
    # again: nothing left to stop is said, and is not a success
    assert main(["stop", "svc", "h0", "--config", config]) == 1
    assert capsys.readouterr().out.strip() == "h0 | == svc: nothing running"


def test_the_gpu_check_waits_for_the_memory_and_names_a_pid_that_still_holds_it(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """nvidia-smi stands in here (no GPU in CI), printing what the real one prints for each
    process that holds memory (`PID, MIB MiB`): the service's pid while it lives, and for
    2 s more after it died (the driver tearing its context down), or for good while a
    `stuck` file exists (a context the driver never released). stop waits out the first
    and says freed; it names the second with its memory, and exits 1."""
    holders = fake_host.home / "holders"
    fake_host.write_tool(
        "nvidia-smi",
        '#!/bin/sh\n[ "$1" = --query-compute-apps=pid,used_memory ] || exit 2\n'
        f"read -r p < {holders}\n"
        'if kill -0 "$p" 2>/dev/null; then date +%s > "$HOME/seen"; fi\n'
        'last=$(cat "$HOME/seen" 2>/dev/null || echo 0)\n'
        'if kill -0 "$p" 2>/dev/null || [ $(($(date +%s) - last)) -lt 2 ] || [ -e "$HOME/stuck" ]\n'
        'then echo "$p, 81920 MiB"; fi\n'
        'echo "999999999, 1024 MiB"\n',  # another user's process: never ours
    )
    body = (
        "setsid sleep 1000 </dev/null >/dev/null 2>&1 &\n"
        f"echo $! > {holders}\n"
        'echo $! > "$GPUDASH_JOB/service.pgid"\n'
    )
    config = tmp_path / "c.toml"
    config.write_text(
        sshd.host_toml(fake_host)
        + f"\n[tasks.svc]\ntitle = 'x'\nkind = 'script'\nrun = '''\n{body}'''\n"
    )
    assert main(["run", "svc", "h0", "--config", str(config)]) == 0
    capsys.readouterr()
    started = time.monotonic()
    assert main(["stop", "svc", "h0", "--grace", "1", "--config", str(config)]) == 0
    said = capsys.readouterr().out.strip()
    assert "(1 process) stopped; GPU memory freed (no compute app of its 1 pid(s) left)" in said
    assert time.monotonic() - started >= 1.0  # it waited for the driver, not just the pid

    (fake_host.home / "stuck").write_text("")
    assert main(["run", "svc", "h0", "--config", str(config)]) == 0
    capsys.readouterr()
    pid = int(holders.read_text())
    hosts = [sshd.host_config(fake_host)]
    from gpudash.cli.stop import stop_on
    from gpudash.config.model import Config

    out = io.StringIO()
    code = asyncio.run(stop_on(Config(None, tuple(hosts)), hosts, "svc", out, grace=1, gpu_wait=1))
    assert code == 1
    assert out.getvalue().strip() == (
        f"h0 | == svc: service group {pid} (1 process) stopped;"
        f" GPU memory STILL HELD by pid {pid} 81920 MiB"
    )


def test_unknown_task_host_or_no_host_is_one_line_and_exit_2(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, [fake_host], tmp_path / "c.toml")
    assert main(["stop", "lnog", "h0", "--config", config]) == 2
    assert "unknown task 'lnog' (did you mean 'long'?)" in capsys.readouterr().err
    assert main(["stop", "long", "h9", "--config", config]) == 2
    assert "unknown host 'h9'" in capsys.readouterr().err
    assert main(["stop", "long", "--config", config]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gpudash: name the hosts to stop 'long' on (HOST... or --tag TAG)"


def test_an_unreachable_host_does_not_hold_the_others(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = tmp_path / "c.toml"
    config.write_text(
        sshd.host_toml(fake_host) + '\n[hosts.gone]\naddress = "127.0.0.1"\nport = 1\n' + TASKS
    )
    assert main(["run", "svc", "h0", "--config", str(config)]) == 0
    capsys.readouterr()
    assert main(["stop", "svc", "h0", "gone", "--grace", "1", "--config", str(config)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("h0   | == svc: service group ") for line in out)
    assert any(line.startswith("gone | == svc: not stopped: ") for line in out)
    assert "Traceback" not in "\n".join(out)


def test_a_hostile_service_record_signals_nothing(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """`1` would be `kill -TERM -1`: every process of the user. It is refused, as is text."""
    config = write_config(sshd, [fake_host], tmp_path / "c.toml")
    folder = job_dir(fake_host, "svc")
    folder.mkdir(parents=True)
    sentinel = subprocess.Popen(["sleep", "1000"])  # a process of the same user
    try:
        for bad in ("1\n", "0", "01", "-5", "12 34", "$(touch x)", "9" * 40, ""):
            (folder / "service.pgid").write_text(bad)
            assert main(["stop", "svc", "h0", "--config", config]) == 1
            said = capsys.readouterr().out.strip()
            assert said.endswith("service.pgid holds no usable process group: nothing signalled")
        assert sentinel.poll() is None
    finally:
        sentinel.kill()
        sentinel.wait()


def test_the_shell_completes_stops_tasks_then_hosts(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(sshd, [fake_host], tmp_path / "c.toml")
    assert main(["__complete", "--config", config, "stop", "l"]) == 0
    assert capsys.readouterr().out.split() == ["long"]
    assert main(["__complete", "--config", config, "stop", "long", ""]) == 0
    assert capsys.readouterr().out.split() == ["h0"]


def test_a_run_still_going_and_the_service_it_started_are_both_stopped(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """As a serve launch cancelled before READY: the supervisor (the job) is still running and
    its engine already runs in a group of its own, recorded in service.pgid."""
    config = tmp_path / "c.toml"
    body = (
        "setsid sleep 1000 </dev/null >/dev/null 2>&1 &\n"
        'echo $! > "$GPUDASH_JOB/service.pgid"\n'
        "echo begin\n"
        "sleep 1000\n"
    )
    config.write_text(
        sshd.host_toml(fake_host)
        + f"\n[tasks.long]\ntitle = 'x'\nkind = 'script'\nrun = '''\n{body}'''\n"
    )
    _launch_detached(sshd, fake_host, str(config))
    record = job_dir(fake_host, "long") / "service.pgid"
    wait_for(record.is_file)
    service = int(record.read_text())
    payload = int((job_dir(fake_host, "long") / "pgid").read_text())
    assert group_alive(service) and group_alive(payload)
    assert main(["stop", "long", "h0", "--grace", "1", "--config", str(config)]) == 0
    said = capsys.readouterr().out.strip()
    assert "run stopped (cancelled rc=" in said
    assert f"service group {service} (1 process) stopped" in said
    assert not group_alive(service) and not group_alive(payload) and not record.exists()
