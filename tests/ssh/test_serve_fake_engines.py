"""The supervisor against SGLang and vLLM as their logs show them: the fake engines of
tests/support/fake_engine.py replay logs recorded from public reports (each fixture's
.source names its URL), bind the port for real and serve, fail, or hang. SGLang and vLLM
cannot run here (no GPU); what is tested is that the supervisor reads their own lines:
phases, facts, the root cause of a failure, a stall in the phase it happened in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import FIXTURES
from tests.support.fake_engine import make_fake_venv

SUPERVISOR = Path(__file__).resolve().parents[2] / "gpudash" / "serve" / "supervisor.py"
PREFIX = "gpudash-serve: "


def supervise(
    tmp: Path,
    engine: str,
    log: str,
    serve: str = "ok",
    stall: float = 60,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> dict:
    """One run of the supervisor (as on a host: a file, stdlib only) on a fake engine."""
    venv = make_fake_venv(tmp / "venv", engine, FIXTURES / "serve" / log, serve=serve, speed=0)
    model = tmp / "models" / "tiny"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"num_attention_heads": 32}))
    (model / "model.safetensors").write_bytes(b"\0" * 64)
    job = tmp / "job"
    job.mkdir()
    argv = [sys.executable, "-I", "-S", "-B", str(SUPERVISOR), "--job", str(job)]
    argv += ["--engine", engine, "--venv", str(venv), "--model", str(model), "--name", "tiny"]
    argv += ["--tp", "2", "--port", "auto", "--stall", str(stall), "--grace", "3"]
    argv += ["--ready-timeout", str(timeout)]
    env = dict(os.environ, HOME=str(tmp), **(env or {}))
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    said: dict[str, list[str]] = {}
    for line in run.stdout.splitlines():
        if line.startswith(PREFIX):
            word, _, rest = line[len(PREFIX) :].partition(" ")
            said.setdefault(word, []).append(rest)
    state = json.loads((tmp / ".cache/gpudash/serve/serve.json").read_text())
    return {"rc": run.returncode, "said": said, "state": state, "out": run.stdout, "job": job}


def failure(run: dict) -> tuple[str, dict]:
    (failed,) = run["said"]["failed"]
    code, _, body = failed.partition(" ")
    return code, json.loads(body)


def phases(run: dict) -> list[str]:
    return [p.split()[0] for p in run["said"].get("phase", [])]


@pytest.fixture(autouse=True)
def _no_engine_left(tmp_path: Path):
    yield
    pgid = tmp_path / "job" / "service.pgid"
    if pgid.exists():
        os.killpg(int(pgid.read_text()), 9)


def test_sglang_is_ready_with_its_phases_from_its_own_log(tmp_path: Path) -> None:
    run = supervise(tmp_path, "sglang", "sglang/good-startup-2468.log")
    assert run["rc"] == 0, run["out"]
    assert phases(run) == ["launch", "kv_cache", "graph_capture", "warmup", "listening"]
    (figures,) = [json.loads(x) for x in run["said"]["ready"]]
    assert sorted(figures["phases_s"]) == sorted(phases(run))  # each phase's duration
    assert figures["ttft_ms"] > 0 and figures["decode_tok_s"] > 0
    assert run["state"]["command"][1:4] == ["-m", "sglang.launch_server", "--model-path"]
    assert "--tp" in run["state"]["command"] and run["state"]["state"] == "ready"


def test_the_attention_backend_sglang_chose_is_recorded_at_ready(tmp_path: Path) -> None:
    run = supervise(tmp_path, "sglang", "sglang/backend-triton-mla-4233.log")
    assert run["rc"] == 0, run["out"]
    assert run["state"]["ready"]["attention_backend"] == "triton"


def test_an_oom_in_graph_capture_is_named_by_its_root_cause_not_the_exit(tmp_path: Path) -> None:
    run = supervise(tmp_path, "sglang", "sglang/oom-graph-capture-5285.log", serve="exit")
    assert run["rc"] == 1
    code, f = failure(run)
    assert code == "serve.oom" and "Capture cuda graph failed: CUDA out of memory" in f["line"]
    assert f["source"] == "https://github.com/sgl-project/sglang/issues/5285"
    assert run["state"]["state"] == "failed" and run["state"]["failure"] == f
    assert not (run["job"] / "service.pgid").exists()


def test_vllm_on_a_driver_too_old_is_serve_driver(tmp_path: Path) -> None:
    run = supervise(tmp_path, "vllm", "vllm/driver-11623.log", serve="exit")
    code, f = failure(run)
    assert (run["rc"], code) == (1, "serve.driver")
    assert "The NVIDIA driver on your system is too old (found version 11040)" in f["line"]


def test_health_200_without_generation_is_not_ready_and_the_engine_is_stopped(
    tmp_path: Path,
) -> None:
    """sglang#6624's shape: /health answers, every chat fails (500)."""
    run = supervise(tmp_path, "vllm", "vllm/good-startup-29335.log", serve="no_generate", stall=3)
    code, f = failure(run)
    assert (run["rc"], code) == (1, "serve.not_ready")
    assert f["why"].startswith("/health answers 200 but a streamed chat fails: HTTP 500")
    pgid = run["state"]["pgid"]
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_a_silent_engine_is_stalled_in_the_phase_its_log_reached(tmp_path: Path) -> None:
    run = supervise(tmp_path, "vllm", "vllm/good-startup-29335.log", serve="hang", stall=3)
    code, f = failure(run)
    assert (run["rc"], code) == (1, "serve.stalled")
    assert f["why"].startswith("stalled in graph_capture (CUDA graph capture): no log line")
    assert run["state"]["state"] == "stalled" and run["state"]["phase"] == "graph_capture"
    with pytest.raises(ProcessLookupError):
        os.killpg(run["state"]["pgid"], 0)


def test_not_ready_within_ready_timeout_is_a_failure_naming_the_phase(tmp_path: Path) -> None:
    run = supervise(tmp_path, "sglang", "sglang/good-startup-2468.log", serve="hang", timeout=3)
    code, f = failure(run)
    assert (run["rc"], code) == (1, "serve.not_ready")
    assert f["why"] == "not ready within ready_timeout (3 s), in phase listening"
    with pytest.raises(ProcessLookupError):
        os.killpg(run["state"]["pgid"], 0)


# A stand-in for nvidia-smi's `--query-gpu=memory.used --format=csv,noheader,nounits` (one
# number of MiB per GPU): the used memory grows each second until MOVING_S have passed since
# FAKE_SMI_START, as while a silent engine loads weights or captures graphs, then holds.
FAKE_SMI = """#!/bin/sh
now=$(date +%s)
if [ $((now - $(cat "$FAKE_SMI_START"))) -lt 8 ]; then echo "$now"; else echo 81234; fi
"""


def test_a_silent_engine_whose_gpu_memory_still_moves_is_not_stalled(tmp_path: Path) -> None:
    """No log line for 8 s, but GPU memory moving all along: the watchdog waits until the
    memory has held for `stall` too (3 s), so the verdict comes after 8 + 3 s, not 3."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    start = tmp_path / "start"
    start.write_text(str(int(time.time())))
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SMI_START": str(start)}
    began = time.monotonic()
    run = supervise(tmp_path, "vllm", "vllm/good-startup-29335.log", "hang", stall=3, env=env)
    took = time.monotonic() - began
    code, f = failure(run)
    assert (run["rc"], code) == (1, "serve.stalled")
    assert f["why"].startswith("stalled in graph_capture")
    assert took >= 10, f"stalled after {took:.1f} s while GPU memory still moved"


def test_a_start_hung_on_a_stale_flashinfer_jit_lock_is_named_serve_jit(tmp_path: Path) -> None:
    """flashinfer#972: a killed run's lock makes the next start wait forever on a JIT load;
    the stall says so instead of only "stalled"."""
    run = supervise(tmp_path, "sglang", "any/jit-lock-flashinfer972.log", "hang", stall=3)
    code, f = failure(run)
    assert (run["rc"], code, run["state"]["state"]) == (1, "serve.jit", "stalled")
    assert f["source"] == "https://github.com/flashinfer-ai/flashinfer/issues/972"
    assert "remove ~/.cache/flashinfer" in f["fix"]
