"""The fake engine the serve tests launch (tests/support/fake_engine.py): it takes the engines'
own command lines, replays a recorded log, binds its port for real, streams chat completions
like sglang/vllm, and dies with its process group."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.serve.classify import Classifier
from tests.support.fake_engine import make_fake_venv

FIXTURES = Path(__file__).parent.parent / "fixtures" / "serve"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(venv: Path, engine: str, port: int, model: str = "/models/tiny") -> list[str]:
    common = ["--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny"]
    if engine == "sglang":
        return [
            str(venv / "bin/python"),
            "-m",
            "sglang.launch_server",
            "--model-path",
            model,
            "--tp",
            "2",
            *common,
        ]
    return [str(venv / "bin/vllm"), "serve", model, "--tensor-parallel-size", "2", *common]


@contextlib.contextmanager
def launched(argv: list[str]) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def read_until(proc: subprocess.Popen, needle: str) -> list[str]:
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if needle in line:
            return lines
    raise AssertionError(f"{needle!r} never came: {lines[-5:]}")


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def chat(port: int, **extra: object) -> tuple[int, bytes]:
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0,
        "max_tokens": 32,
        **extra,
    }
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sglang_fake_replays_its_log_serves_a_streamed_chat_and_dies_with_its_group(
    tmp_path: Path,
) -> None:
    log = FIXTURES / "sglang" / "good-startup-2468.log"
    venv = make_fake_venv(tmp_path / "venv", "sglang", log, speed=0)
    port = free_port()
    with launched(command(venv, "sglang", port)) as proc:
        lines = read_until(proc, "Uvicorn running on")
        assert lines[0].endswith(
            "Load weight end. type=MistralForCausalLM, dtype=torch.bfloat16, avail mem=9.69 GB"
        )
        assert lines[-1].endswith(
            f"Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)"
        )
        assert get(f"http://127.0.0.1:{port}/health")[0] == 200
        status, body = get(f"http://127.0.0.1:{port}/v1/models")
        assert status == 200 and json.loads(body)["data"][0]["id"] == "tiny"
        status, body = chat(port, stream=True)
        events = [e.removeprefix("data: ") for e in body.decode().split("\n\n") if e]
        assert status == 200 and events[-1] == "[DONE]"
        chunks = [json.loads(e)["choices"][0] for e in events[:-1]]
        assert "".join(c["delta"].get("content", "") for c in chunks).startswith("The quick")
        assert chunks[-1]["finish_reason"] == "length" and len(chunks) == 34
        status, body = chat(port, max_tokens=256)
        assert json.loads(body)["choices"][0]["finish_reason"] == "stop"
        assert chat(port, model="other")[0] == 404
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group_alive(proc.pid)


def test_a_taken_port_is_a_real_port_in_use_in_the_engines_words(tmp_path: Path) -> None:
    venv = make_fake_venv(
        tmp_path / "venv", "vllm", FIXTURES / "vllm" / "good-startup-19794.log", speed=0
    )
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with launched(command(venv, "vllm", port)) as proc:
            out = proc.communicate(timeout=30)[0].splitlines()
    assert proc.returncode == 1
    judge = Classifier("vllm")
    for line in out:
        judge.feed(line)
    verdict = judge.result()
    assert verdict is not None and verdict.code == "serve.port_in_use"
    assert verdict.lineno == len(out)


def test_exit_mode_replays_a_failure_with_the_model_substituted_and_exits_1(
    tmp_path: Path,
) -> None:
    log = FIXTURES / "sglang" / "model-access-gated-387.log"
    venv = make_fake_venv(tmp_path / "venv", "sglang", log, serve="exit", speed=0)
    with launched(command(venv, "sglang", free_port(), model="org/gated")) as proc:
        out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 1
    assert "Access to model org/gated is restricted" in out


def test_no_generate_answers_health_but_fails_chat_and_hang_goes_silent(tmp_path: Path) -> None:
    log = FIXTURES / "vllm" / "good-startup-29335.log"
    venv = make_fake_venv(tmp_path / "a", "vllm", log, serve="no_generate", speed=0)
    port = free_port()
    with launched(command(venv, "vllm", port)) as proc:
        read_until(proc, "Uvicorn running on")
        assert get(f"http://127.0.0.1:{port}/health")[0] == 200
        assert chat(port, stream=True)[0] == 500
    venv = make_fake_venv(tmp_path / "b", "vllm", log, serve="hang", speed=0)
    with launched(command(venv, "vllm", port)) as proc:
        read_until(proc, "Capturing CUDA graphs (decode, FULL)")
        time.sleep(0.5)
        assert proc.poll() is None
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_unknown_engine_or_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown"):
        make_fake_venv(tmp_path, "tgi", FIXTURES / "vllm" / "arch-18995.log")


def test_transformers_fake_replays_the_real_cpu_capture_on_the_given_port(tmp_path: Path) -> None:
    log = FIXTURES / "transformers" / "serve-cpu-local.log"
    venv = make_fake_venv(tmp_path / "venv", "transformers", log, speed=0)
    port = free_port()
    argv = [
        str(venv / "bin/transformers"),
        "serve",
        "/models/tiny",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
    ]
    with launched(argv) as proc:
        lines = read_until(proc, "Uvicorn running on")
        assert lines[0] == "[transformers] Loading /models/tiny@main"
        assert lines[-1].endswith(f"http://127.0.0.1:{port} (Press CTRL+C to quit)")
        assert get(f"http://127.0.0.1:{port}/health")[0] == 200
