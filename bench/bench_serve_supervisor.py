"""The serve supervisor's two bounds from issue 29, measured against baselines in the same run:

1. readiness is declared within 2 s of the engine being able to generate: a fake engine
   (tests/support/fake_engine.py, replaying vLLM's recorded start-up) that serves as soon as
   it listens; the time from its "Uvicorn running" line reaching the supervisor's stdout to
   the supervisor's READY line, against one bare streamed chat of the same 32 tokens sent to
   the same engine afterwards (ready.chat: the floor any client pays);
2. polling costs under 1 % of a core: the supervisor's CPU (utime + stime from /proc) while
   it waits on an engine that went silent (the fake engine's "hang"), over WINDOW seconds,
   against an idle Python process measured over the same window.

    python -m bench.bench_serve_supervisor [WINDOW_S]     (default 20)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudash.serve import ready  # noqa: E402
from tests.support.fake_engine import make_fake_venv  # noqa: E402

LOG = ROOT / "tests" / "fixtures" / "serve" / "vllm" / "good-startup-19794.log"
SUPERVISOR = ROOT / "gpudash" / "serve" / "supervisor.py"


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(tmp: Path, serve: str, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    venv = make_fake_venv(tmp / "venv", "vllm", LOG, serve=serve, speed=0)
    model = tmp / "model"
    model.mkdir()
    (model / "config.json").write_text('{"num_attention_heads": 8}')
    (model / "model.safetensors").write_bytes(b"\0")
    job = tmp / "job"
    job.mkdir()
    argv = [sys.executable, "-I", "-S", "-B", str(SUPERVISOR), "--job", str(job)]
    argv += ["--engine", "vllm", "--venv", str(venv), "--model", str(model), "--name", "m"]
    argv += ["--port", "auto", *extra]
    env = dict(os.environ, HOME=str(tmp))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, bufsize=1)
    return proc, job


def readiness(tmp: Path) -> dict[str, float]:
    proc, job = start(tmp, "ok")
    listening = declared = None
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.monotonic()
        if listening is None and "Uvicorn running on" in line:
            listening = now
        if line.startswith("gpudash-serve: generated ") and "READY" in line:
            declared = now
    proc.wait()
    pgid = int((job / "service.pgid").read_text())
    state = json.loads((tmp / ".cache/gpudash/serve/serve.json").read_text())
    bare = ready.chat(state["port"], "m", 32)
    os.killpg(pgid, signal.SIGKILL)
    assert listening is not None and declared is not None and bare.ok
    return {"listening_to_ready_s": declared - listening, "bare_chat_s": bare.total_s}


def polling(tmp: Path, window: float) -> dict[str, float]:
    proc, job = start(tmp, "hang", "--stall", "3600")
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    time.sleep(3.0)  # both past their start-up
    before = cpu_s(proc.pid), cpu_s(idle.pid)
    t0 = time.monotonic()
    time.sleep(window)
    took = time.monotonic() - t0
    after = cpu_s(proc.pid), cpu_s(idle.pid)
    for p in (proc, idle):
        p.kill()
        p.wait()
    os.killpg(int((job / "service.pgid").read_text()), signal.SIGKILL)
    return {
        "supervisor_core_pct": 100 * (after[0] - before[0]) / took,
        "idle_python_core_pct": 100 * (after[1] - before[1]) / took,
        "window_s": took,
    }


SMOKE: tuple[tuple[str, ...], ...] = (("2",),)
"""A 2 s polling window: seconds, for tests/perf/test_bench_smoke.py."""


def main() -> None:
    window = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        r = readiness(Path(a))
        p = polling(Path(b), window)
    print(
        f"readiness: READY {r['listening_to_ready_s']:.2f} s after the engine listened"
        f" (bound 2 s); one bare streamed chat of 32 tokens: {r['bare_chat_s']:.3f} s"
        f" (ratio {r['listening_to_ready_s'] / r['bare_chat_s']:.1f}x)"
    )
    print(
        f"polling: supervisor {p['supervisor_core_pct']:.2f} % of a core over"
        f" {p['window_s']:.0f} s (bound 1 %); idle python {p['idle_python_core_pct']:.2f} %"
    )


if __name__ == "__main__":
    main()
