"""`gpudash run serve HOST` end to end: the real CLI in a subprocess, over the test sshd, a
real `transformers serve` on the CPU (tests/support/engine.py), the supervisor shipped as the
job's files. What a user relies on: exit 0 only at READY with the figures, the server left
running on the host after gpudash is gone, its process group in the job dir for `stop`; and
a refusal, before anything launches, for what the probe shows would fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpudash.serve import ready
from tests.support.engine import serve_venv, tiny_model
from tests.support.sshd import FakeHost, Sshd

TASKS = """
[tasks.serve]
params = {{ venv = "{venv}", engine = "transformers", model = "{model}", port = "auto", \
ready_timeout = "4m", stall = "2m" }}
env = {{ HF_HUB_OFFLINE = "1" }}
"""


def _gpudash(config: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    argv = [sys.executable, "-m", "gpudash", "--config", str(config), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def test_run_serve_exits_0_at_ready_and_leaves_the_server_running(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    venv, model = serve_venv(), tiny_model()
    config = tmp_path / "c.toml"
    config.write_text(sshd.host_toml(fake_host) + TASKS.format(venv=venv, model=model))
    started = time.monotonic()
    run = _gpudash(config, "run", "serve", "h0", "-y")
    took = time.monotonic() - started
    out = run.stdout.splitlines()
    assert run.returncode == 0, run.stdout + run.stderr
    (ready_line,) = [x for x in out if x.startswith("h0 | gpudash-serve: ready ")]
    figures = json.loads(ready_line.split(" ready ", 1)[1])
    print(f"gpudash run serve: {took:.1f} s; {figures}")
    assert any(x.startswith("h0 | gpudash-serve: command ") and " serve " in x for x in out)
    assert any(x.startswith("h0 | gpudash-serve: phase listening ") for x in out)
    assert figures["ttft_ms"] > 0 and figures["decode_tok_s"] > 0
    # The state file on the host, and the engine still serving after gpudash exited
    state_file = fake_host.home / ".cache" / "gpudash" / "serve" / "serve.json"
    state = json.loads(state_file.read_text())
    job = fake_host.home / ".cache" / "gpudash" / "jobs" / "serve"
    pgid = int((job / "service.pgid").read_text())
    stopped = None
    try:
        assert (state["state"], state["pgid"], state["ready"]) == ("ready", pgid, figures)
        assert state["log"] == str(job / "engine.log")
        shipped = {p.name for p in (job / "files").iterdir()}
        assert {"supervisor.py", "engine_run.py", "ladder.py", "ready.py"} <= shipped
        gen = ready.chat(state["port"], str(model), 8)
        assert gen.ok, gen.error
        # The probe reads the live server back: the serve section, and check's serve.ready
        probed = _gpudash(config, "probe", "h0", "--json", timeout=120)
        (host,) = json.loads(probed.stdout)["hosts"]
        assert '"state": "ready"' in json.dumps(host["sections"]["serve"]), host["sections"]
        # `gpudash stop serve h0` stops the engine gpudash left running, and the state says so
        stopped = _gpudash(config, "stop", "serve", "h0", timeout=120)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    finally:
        if stopped is None or stopped.returncode != 0:
            os.killpg(pgid, signal.SIGTERM)
    end = time.monotonic() + 15
    while ready.port_open(state["port"]) and time.monotonic() < end:
        time.sleep(0.2)
    assert not ready.port_open(state["port"])
    assert json.loads(state_file.read_text())["state"] == "stopped"
    assert not (job / "service.pgid").exists()
    checked = _gpudash(config, "check", "h0", "--json", timeout=120)
    codes = [f["code"] for h in json.loads(checked.stdout)["hosts"] for f in h["findings"]]
    assert "serve.stopped" in codes and "serve.exited" not in codes, codes


def _half_model(host: FakeHost, where: str) -> Path:
    model = host.home / where / "half"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"num_attention_heads": 4}')
    return model


def test_run_serve_refuses_a_model_the_probe_sees_incomplete_before_any_job(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    """~/models is one of the probe's model dirs: its models section shows the folder has a
    config but no weights, and the preflight refuses in gpudash, one line with why and fix."""
    model = _half_model(fake_host, "models")
    config = tmp_path / "c.toml"
    config.write_text(sshd.host_toml(fake_host) + TASKS.format(venv=serve_venv(), model=model))
    run = _gpudash(config, "run", "serve", "h0", "-y", timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines() == [
        f"h0 | == serve: not run: serve: serve.model_access: {model} is incomplete: no weights"
        " (the engine fails while loading weights); fix: finish the download (gpudash run"
        " model HOST resumes it)"
    ]
    assert not (fake_host.home / ".cache" / "gpudash" / "jobs" / "serve").exists()


def test_run_serve_refuses_on_the_host_a_folder_the_probe_does_not_list(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    """Outside the probe's model dirs, the supervisor's own check on the host refuses before
    it launches anything: one line, exit 1, no engine log, no process group."""
    model = _half_model(fake_host, "elsewhere")
    config = tmp_path / "c.toml"
    config.write_text(sshd.host_toml(fake_host) + TASKS.format(venv=serve_venv(), model=model))
    run = _gpudash(config, "run", "serve", "h0", "-y", timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    refused = [x for x in run.stdout.splitlines() if "gpudash-serve: refused " in x]
    assert refused == [
        f"h0 | gpudash-serve: refused serve.model_access: {model} has no weights (*.safetensors,"
        " *.bin, *.gguf); fix: finish the download (the model task resumes it)"
    ]
    job = fake_host.home / ".cache" / "gpudash" / "jobs" / "serve"
    assert not (job / "engine.log").exists() and not (job / "service.pgid").exists()


def test_run_serve_show_prints_the_engine_command_and_launches_nothing(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    venv, model = serve_venv(), tiny_model()
    config = tmp_path / "c.toml"
    config.write_text(sshd.host_toml(fake_host) + TASKS.format(venv=venv, model=model))
    run = _gpudash(config, "run", "serve", "h0", "--show", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    engine = f"{venv}/bin/transformers serve {model} --host 127.0.0.1 --port PORT --device cpu"
    assert f"# engine: {engine}\n" in run.stdout
    assert "export GPUDASH_TP=1\n" in run.stdout and "export GPUDASH_DEVICE=cpu\n" in run.stdout
    assert not (fake_host.home / ".cache" / "gpudash" / "jobs" / "serve").exists()
