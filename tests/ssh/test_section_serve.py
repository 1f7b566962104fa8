"""The serve section over the real test sshd: state files written by the test, and the host's
own answer on each engine's pid (a real live `sleep`, a real dead pid) and port (a real
listening socket, a closed one), in the same round trip as the files; then its findings and
its part of the Markdown report. dash and busybox sh run the body locally too."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from gpudash.checks.serve import check_states
from gpudash.host_probe import probe_host
from gpudash.model import HostResult, SectionDone
from gpudash.probe.registry import section
from gpudash.probe.sections import serve
from gpudash.report import render_markdown
from gpudash.transport.ssh import SshPool
from tests.support.sectionrun import (
    BASIC_TOOLS,
    SHELL_NAMES,
    bin_dir,
    run_section,
    shell_argv,
)
from tests.support.sshd import FakeHost, Sshd
from tests.unit.test_serve_state import OOM, READY


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def write_states(home: Path, states: dict[str, dict]) -> Path:
    folder = home / serve.STATE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in states.items():
        (folder / f"{name}.json").write_text(json.dumps(doc))
    return folder


async def probe_serve(sshd: Sshd, host: FakeHost, pool: SshPool) -> serve.Serve:
    config = sshd.host_config(host)
    results = [
        e.result
        async for e in probe_host(config, pool.transport(config), [section("serve")])
        if isinstance(e, SectionDone)
    ]
    assert len(results) == 1 and results[0].error is None, results
    return results[0].data


async def test_a_live_engine_on_a_listening_port_reads_ready_and_a_dead_one_exited(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    engine = subprocess.Popen(["sleep", "1000"])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    gone = dead_pid()
    try:
        write_states(
            fake_host.home,
            {
                "serve": {**READY, "pid": engine.pid, "pgid": engine.pid, "port": port},
                "serve-old": {**READY, "pid": gone, "port": port},
                "serve-oom": {**OOM, "pid": gone},
            },
        )
        data = await probe_serve(sshd, fake_host, ssh_pool)
    finally:
        engine.kill()
        engine.wait()
        listener.close()
    by_file = {s.file: s for s in data.states}
    assert list(by_file) == ["serve-old", "serve-oom", "serve"]  # the host's name order
    live = by_file["serve"]
    assert (live.alive, live.listening, live.verdict) == (True, True, "ready")
    old = by_file["serve-old"]
    assert (old.alive, old.verdict) == (False, "exited")
    assert by_file["serve-oom"].failure is not None
    assert data.host_now is not None

    findings = {f.facts["task"]: f for f in check_states(data)}
    assert (findings["serve"].code, findings["serve"].severity.value) == ("serve.ready", "ok")
    assert findings["serve"].facts["ttft_ms"] == 41.0
    assert findings["serve-old"].code == "serve.exited"
    assert findings["serve-old"].title.endswith(f"exited after ready: pid {gone} is gone")
    oom = findings["serve-oom"]
    assert (oom.code, oom.severity.value) == ("serve.oom", "fail")
    assert oom.fix == OOM["failure"]["fix"]
    assert oom.facts["line"] == OOM["failure"]["line"]

    from gpudash.model import SectionResult

    result = HostResult("h0", sections={"serve": SectionResult("serve", data, None, {}, 0.1)})
    report = render_markdown(result, tuple(findings.values()))
    assert "## Serve" in report
    assert f"sglang serving /models/Qwen3-8B on port {port}, tp 8: **ready 312 s" in report
    assert "`serve.oom`: torch.OutOfMemoryError: CUDA out of memory." in report
    assert "- **FAIL** `serve.oom`:" in report


async def test_a_closed_port_under_a_live_pid_is_said_and_no_state_dir_is_no_engine(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    data = await probe_serve(sshd, fake_host, ssh_pool)
    assert data.looked and data.states == ()
    assert serve.summary(data).startswith("no served engine")

    engine = subprocess.Popen(["sleep", "1000"])
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: nothing accepts there
    try:
        port = closed.getsockname()[1]
        write_states(fake_host.home, {"serve": {**READY, "pid": engine.pid, "port": port}})
        data = await probe_serve(sshd, fake_host, ssh_pool)
    finally:
        engine.kill()
        engine.wait()
        closed.close()
    (state,) = data.states
    assert (state.alive, state.listening) == (True, False)
    (finding,) = check_states(data)
    assert finding.code == "serve.not_listening" and finding.severity.value == "fail"


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_the_body_under_each_shell_with_a_hostile_and_a_huge_file(tmp_path: Path, shell):
    home = tmp_path / "home"
    gone = dead_pid()
    folder = write_states(home, {"a": {**READY, "pid": gone}})
    (folder / "b.json").write_text('{"state": "ready", "pid": "$(touch pwned)"}\x1b]0;x\x07')
    (folder / "c.json").write_text('{"pid": 1' + "1" * 10 + ', "x": "' + "y" * (1 << 20) + '"}')
    (folder / "d.json").mkdir()  # not a file: skipped
    env = {"HOME": str(home), "PATH": bin_dir(tmp_path / "bin", (*BASIC_TOOLS, "printf"))}
    _parts, data = run_section(serve, env, shell=shell_argv(shell))
    assert [s.file for s in data.states] == ["a", "b", "c"]
    a, b, c = data.states
    assert (a.state, a.pid, a.alive, a.verdict) == ("ready", gone, False, "exited")
    assert b.state == "unknown" and b.alive is None
    assert c.state == "unknown" and "larger than" in c.notes[0]
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_more_files_than_the_cap_are_counted_not_read(tmp_path: Path):
    home = tmp_path / "home"
    write_states(home, {f"s{i:02d}": READY for i in range(20)})
    _parts, data = run_section(serve, {"HOME": str(home), "PATH": bin_dir(tmp_path / "bin")})
    assert len(data.states) == serve.MAX_FILES
    assert data.notes == (f"20 state files: only the first {serve.MAX_FILES} read",)


async def test_a_live_engine_lists_every_process_of_its_group_and_its_gpu_memory_is_no_warn(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    """An engine's workers hold the GPU memory (SGLang: a scheduler per GPU), so the section
    lists the pids of the engine's process group; then the GPU memory they hold is the served
    model's, said as info, while a stranger's memory on the GPU is still a warn."""
    from gpudash.checks import gpus as gpus_check
    from gpudash.checks.context import Context
    from gpudash.probe.sections.gpus import Gpu, GpuProcess, Gpus

    engine = subprocess.Popen(["sh", "-c", "sleep 1000 & sleep 1000"], start_new_session=True)
    try:
        for _ in range(100):  # until the shell has forked its worker
            kids = subprocess.run(
                ["pgrep", "-g", str(engine.pid)], capture_output=True, text=True
            ).stdout.split()
            if len(kids) >= 3:
                break
            await asyncio.sleep(0.05)
        write_states(fake_host.home, {"serve": {**READY, "pid": engine.pid, "pgid": engine.pid}})
        data = await probe_serve(sshd, fake_host, ssh_pool)
    finally:
        os.killpg(engine.pid, signal.SIGKILL)
        engine.wait()
    (live,) = data.states
    assert live.alive and set(live.members) == {int(k) for k in kids}, (live.members, kids)
    worker = max(int(k) for k in kids)

    def findings(pid: int) -> dict[str, str]:
        gpu = Gpu(index=0, name="NVIDIA H200", memory_used_mib=918)
        held = GpuProcess(gpu=0, pid=pid, type="C", name="python", memory_mib=918)
        gpus = Gpus(source="nvidia-smi", gpus=(gpu,), processes=(held,))
        ctx = Context(HostResult("h0"), None, (), {"gpus": gpus, "serve": data})
        return {f.code: f.severity.value for f in gpus_check.check(ctx)}

    assert findings(worker)["gpus.memory_served"] == "info"
    assert "gpus.memory_in_use" not in findings(worker)
    assert findings(dead_pid())["gpus.memory_in_use"] == "warn"
