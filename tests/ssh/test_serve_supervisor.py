"""The serve supervisor against a real engine: `transformers serve` on the CPU, a tiny model.

Each test runs `gpudash/serve/supervisor.py` as the task does on a host (a file run by the
serving venv's python, its siblings beside it) and reads what it printed, the state file and
the engine's process group. The venv and the model are built once and cached
(tests/support/engine.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.serve import ready
from tests.support.engine import serve_venv, tiny_model

SUPERVISOR = Path(__file__).resolve().parents[2] / "gpudash" / "serve" / "supervisor.py"
PREFIX = "gpudash-serve: "


@pytest.fixture(scope="module")
def engine() -> tuple[Path, Path]:
    return serve_venv(), tiny_model()


class Run:
    """One supervisor run: its process, its job dir, its HOME (the state file's)."""

    def __init__(self, tmp: Path, venv: Path, model: Path, *extra: str) -> None:
        self.job = tmp / "jobs" / "serve"
        self.job.mkdir(parents=True)
        self.home = tmp
        argv = [str(venv / "bin" / "python"), str(SUPERVISOR), "--job", str(self.job)]
        argv += ["--engine", "transformers", "--venv", str(venv), "--model", str(model)]
        argv += ["--device", "cpu", "--grace", "5", *extra]
        env = dict(os.environ, HOME=str(tmp), HF_HUB_OFFLINE="1")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.out = ""

    def wait(self, timeout: float = 240) -> int:
        self.out, _ = self.proc.communicate(timeout=timeout)
        return self.proc.returncode

    def says(self, what: str) -> list[str]:
        return [
            line[len(PREFIX) + len(what) + 1 :]
            for line in self.out.splitlines()
            if line.startswith(PREFIX + what + " ")
        ]

    @property
    def state(self) -> dict:
        return json.loads((self.home / ".cache/gpudash/serve/serve.json").read_text())

    def pgid(self, timeout: float = 30) -> int:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                return int((self.job / "service.pgid").read_text())
            except (OSError, ValueError):
                time.sleep(0.1)
        raise AssertionError("no service.pgid")


def _gone(pgid: int, timeout: float = 15) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def cleanup() -> Iterator[list[int]]:
    """Process groups a test leaves running (a ready engine), killed after it."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def test_a_real_engine_is_ready_only_after_a_streamed_chat_and_is_left_running(
    engine: tuple[Path, Path], tmp_path: Path, cleanup: list[int]
) -> None:
    run = Run(tmp_path, *engine, "--task", "serve", "--port", "auto")
    assert run.wait() == 0, run.out
    (figures,) = [json.loads(x) for x in run.says("ready")]
    print("measured:", figures)  # the report's figures: pytest -s shows them
    state = run.state
    cleanup.append(state["pgid"])
    # The ladder in order, READY declared after the first generation, figures from a second
    (command,) = run.says("command")
    assert command.startswith(f"{engine[0]}/bin/transformers serve {engine[1]} --host 127.0.0.1")
    assert run.says("phase")[0] == "launch 0.0" and run.says("phase")[-1].startswith("listening")
    assert run.says("health") == ["200"]
    assert "warning: /v1/models answered 500" in run.out  # transformers 5.17, no hub cache
    (generated,) = run.says("generated")
    assert generated.startswith("32 tokens")
    assert figures["ttft_ms"] > 0 and figures["decode_tok_s"] > 0
    assert figures["measured_tokens"] == 256
    assert 0 < figures["time_to_ready_s"] < 240
    entered = [p.split()[0] for p in run.says("phase")]
    assert set(figures["phases_s"]) == set(entered) >= {"launch", "listening"}
    # The state file says the same, and the engine is its own session, still serving
    assert (state["state"], state["engine"], state["ready"]) == ("ready", "transformers", figures)
    assert state["port"] >= 30000 and state["command"][1] == "serve"
    assert state["pgid"] == int((run.job / "service.pgid").read_text()) == state["pid"]
    assert os.getsid(state["pid"]) == state["pid"]
    again = ready.chat(state["port"], str(engine[1]), 8)
    assert again.ok and again.deltas >= 1, again.error
    # A second launch of the same task while this server runs is refused, naming its group
    second = Run(tmp_path / "2", *engine, "--job", str(run.job), "--port", "auto")
    assert second.wait(60) == 1
    (failed,) = second.says("failed")
    assert failed.startswith("serve.port_in_use ")
    assert f"this task's earlier server still runs (process group {state['pgid']})" in failed
    assert int((run.job / "service.pgid").read_text()) == state["pgid"]
    os.killpg(state["pgid"], signal.SIGTERM)
    assert _gone(state["pgid"]), "the engine outlived TERM to its group"


def test_a_port_held_by_another_process_is_refused_naming_it_and_nothing_launches(
    engine: tuple[Path, Path], tmp_path: Path
) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        run = Run(tmp_path, *engine, "--port", str(port))
        assert run.wait(60) == 1
    (failed,) = run.says("failed")
    code, _, body = failed.partition(" ")
    failure = json.loads(body)
    assert code == "serve.port_in_use"
    assert f"port {port} is held by pid {os.getpid()} (" in failure["line"]
    assert run.state["state"] == "failed" and run.state["failure"] == failure
    assert not (run.job / "engine.log").exists() and not run.says("command")


def test_an_engine_that_exits_is_named_by_its_first_error_and_exits_1(
    engine: tuple[Path, Path], tmp_path: Path
) -> None:
    run = Run(tmp_path, *engine, "--port", "auto", "--arg=--no-such-flag")
    assert run.wait(120) == 1
    (failed,) = run.says("failed")
    code, _, body = failed.partition(" ")
    failure = json.loads(body)
    assert code == "serve.exited", failure
    assert "no-such-flag" in failure["line"]
    assert "the engine exited (rc 2)" in failure["why"]
    assert not (run.job / "service.pgid").exists()


def test_a_stalled_engine_is_named_with_its_phase_and_stopped_and_polling_is_cheap(
    engine: tuple[Path, Path], tmp_path: Path, cleanup: list[int]
) -> None:
    """SIGSTOP freezes the real engine while it loads: no log line, no answer. The
    watchdog names the phase after `stall`, quotes the last lines, stops the group."""
    stall = 8.0
    run = Run(tmp_path, *engine, "--port", "auto", "--stall", str(stall))
    pgid = run.pgid()
    cleanup.append(pgid)
    os.killpg(pgid, signal.SIGSTOP)
    time.sleep(2.0)  # the supervisor's start-up is over: what follows is polling alone
    before = _cpu_s(run.proc.pid)
    t0 = time.monotonic()
    time.sleep(4.0)
    polling = (_cpu_s(run.proc.pid) - before) / (time.monotonic() - t0)
    assert run.wait(120) == 1
    print(f"supervisor polling: {polling * 100:.2f} % of a core")
    (failed,) = run.says("failed")
    code, _, body = failed.partition(" ")
    failure = json.loads(body)
    assert code == "serve.stalled"
    assert failure["why"].startswith("stalled in launch: no log line and no change in GPU")
    assert run.state["state"] == "stalled"
    assert _gone(pgid, 5), "the stalled engine's group was not stopped"
    assert polling < 0.01


def _cpu_s(pid: int) -> float:
    """utime + stime of a process, from /proc/PID/stat (fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_term_to_the_supervisor_before_ready_stops_the_engine_group(
    engine: tuple[Path, Path], tmp_path: Path, cleanup: list[int]
) -> None:
    """A cancel (gpudash signals the job's payload group) while the engine loads: the
    supervisor stops the engine's own group too, and says the run was stopped."""
    run = Run(tmp_path, *engine, "--port", "auto")
    pgid = run.pgid()
    cleanup.append(pgid)
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait(60) == 1
    assert _gone(pgid, 5), "the engine outlived its supervisor's TERM"
    assert run.state["state"] == "stopped"
    assert not (run.job / "service.pgid").exists()
