"""The local host's first round in a forked child (gpudash/forked.py): the same result as a
round run in the app's process, a fallback when the child dies, and no process left behind
however the app ends.

Each case runs in a fresh interpreter (`run_case`): a fork is only taken with no thread
running, and pytest's process has some."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import fakegpu
import pytest

FIX = Path(__file__).parent / "fixtures"
GPUDASH = Path(sys.executable).with_name("gpudash")

CASE = """
import asyncio, json, os, sys, time
from gpudash.config import Config, HostConfig
from gpudash.fleet import Fleet
from gpudash.forked import ForkedRound, follow
from gpudash.headstart import HeadStart
from gpudash.model import FindingsComputed, ProbeFinished, SectionDone

here = HostConfig(name="here", transport="local", address="localhost",
                  network_targets=("http://127.0.0.1:9/",))
config = Config(None, (here,))

def summary(fleet, events):
    result = fleet.results["here"]
    return {
        "kinds": [type(e).__name__ for e in events],
        "sections": sorted(e.result.name for e in events if isinstance(e, SectionDone)),
        "gpus": repr(result.data("gpus")),
        "findings": sorted(f.code for f in result.findings),
        "probed_here": "here" in fleet._transports,
    }
"""


def run_case(body: str, tools: Path, timeout: float = 60) -> dict[str, object]:
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "GPUDASH_NVML": "0"}
    code = CASE + textwrap.dedent(body)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """The H200's nvidia-smi and nvcc, as captured."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fakegpu.install(bin_dir, FIX / "h200-1x")
    return bin_dir


def unique(n: int) -> str:
    """A `sleep` argument no other run of this suite uses."""
    return f"4343{n}.{os.getpid()}"


def sleeping(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"sleep {marker}" in line]


def hang_nvidia_smi(tools: Path, marker: str) -> None:
    smi = tools / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nexec sleep {marker}\n")
    smi.chmod(0o755)


def test_a_forked_round_gives_what_a_round_in_the_app_gives(tools: Path) -> None:
    seen = run_case(
        """
        forked = ForkedRound.start(config, "here")  # before the loop, as the app does
        assert forked is not None and forked.pid != os.getpid()
        async def main():
            assert ForkedRound.start(config, "here") is None  # never under a running loop
            fleet = Fleet(config)
            events = [e async for e in follow(fleet, forked)]
            try:
                os.waitpid(forked.pid, os.WNOHANG)
                reaped = False
            except ChildProcessError:
                reaped = True
            here = Fleet(config)
            local = [e async for e in here.probe(["here"])]
            seen = {"forked": summary(fleet, events), "here": summary(here, local),
                    "reaped": reaped}
            await here.close()
            return seen
        print(json.dumps(asyncio.run(main())))
        """,
        tools,
    )
    forked, here = seen["forked"], seen["here"]
    assert forked["probed_here"] is False  # the child ran it: no transport in the app
    assert here["probed_here"] is True
    assert forked["sections"] == here["sections"] and len(forked["sections"]) == 7
    assert forked["gpus"] == here["gpus"] and "H200" in forked["gpus"]
    assert forked["findings"] == here["findings"] and forked["findings"]  # the app's checks
    assert forked["kinds"][-2:] == ["ProbeFinished", "FindingsComputed"]
    assert seen["reaped"] is True


def test_a_child_that_dies_mid_round_is_replaced_by_a_round_in_the_app(tools: Path) -> None:
    seen = run_case(
        """
        import signal
        forked = ForkedRound.start(config, "here")
        os.kill(forked.pid, signal.SIGKILL)
        async def main():
            fleet = Fleet(config)
            events = [e async for e in follow(fleet, forked)]
            seen = summary(fleet, events)
            await fleet.close()
            return seen
        print(json.dumps(asyncio.run(main())))
        """,
        tools,
    )
    assert seen["probed_here"] is True
    assert len(seen["sections"]) == 7 and "H200" in seen["gpus"]
    assert seen["kinds"].count("ProbeFinished") == 1


def test_stopping_the_head_start_stops_the_child_and_its_script(tools: Path) -> None:
    marker = unique(1)
    hang_nvidia_smi(tools, marker)
    seen = run_case(
        f"""
        import subprocess
        def sleepers():
            ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            return [l for l in ps.splitlines() if "sleep {marker}" in l]
        forked = ForkedRound.start(config, "here")
        async def main():
            fleet = Fleet(config)
            head_start = HeadStart(fleet, [], forked)
            deadline = time.monotonic() + 30
            while not sleepers():
                assert time.monotonic() < deadline, "nvidia-smi never ran"
                await asyncio.sleep(0.02)
            started = time.monotonic()
            await head_start.close()
            took = time.monotonic() - started
            try:
                os.waitpid(forked.pid, os.WNOHANG)
                alive = True
            except ChildProcessError:
                alive = False
            return {{"took": took, "child_alive": alive, "probed_here": bool(fleet._transports)}}
        print(json.dumps(asyncio.run(main())))
        """,
        tools,
    )
    assert seen["took"] < 1.0 and seen["child_alive"] is False
    assert seen["probed_here"] is False  # the sleeper was the child's
    deadline = time.monotonic() + 5
    while sleeping(marker):
        assert time.monotonic() < deadline, f"left running: {sleeping(marker)}"
        time.sleep(0.05)


def test_a_head_start_closed_before_its_first_step_still_stops_the_child(tools: Path) -> None:
    marker = unique(4)
    hang_nvidia_smi(tools, marker)
    seen = run_case(
        """
        forked = ForkedRound.start(config, "here")
        async def main():
            fleet = Fleet(config)
            head_start = HeadStart(fleet, [], forked)
            await head_start.close()  # the app quit at once: its pump never ran
            await asyncio.sleep(0.5)
            try:
                os.waitpid(forked.pid, os.WNOHANG)
                return {"child_alive": True}
            except ChildProcessError:
                return {"child_alive": False}
        print(json.dumps(asyncio.run(main())))
        """,
        tools,
    )
    assert seen["child_alive"] is False
    deadline = time.monotonic() + 5
    while sleeping(marker):
        assert time.monotonic() < deadline, f"left running: {sleeping(marker)}"
        time.sleep(0.05)


def test_a_killed_app_takes_its_child_and_script_with_it(tools: Path) -> None:
    marker = unique(2)
    hang_nvidia_smi(tools, marker)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "GPUDASH_NVML": "0"}
    code = CASE + "forked = ForkedRound.start(config, 'here')\nprint(forked.pid, flush=True)\n"
    code += "time.sleep(60)\n"
    app = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    try:
        assert app.stdout is not None
        child = int(app.stdout.readline())
        deadline = time.monotonic() + 30
        while not sleeping(marker):
            assert time.monotonic() < deadline, "nvidia-smi never ran"
            time.sleep(0.02)
        app.send_signal(signal.SIGKILL)  # no handler, no close: only the kernel's notice
        app.wait(timeout=5)
        deadline = time.monotonic() + 5
        while sleeping(marker) or Path(f"/proc/{child}").exists():
            assert time.monotonic() < deadline, f"left running: {sleeping(marker)}"
            time.sleep(0.05)
    finally:
        app.kill()
        app.wait()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_gpudash_in_tmux_shows_the_forked_local_round_and_quits_clean(
    tools: Path, tmp_path: Path
) -> None:
    from test_tmux import Tmux

    marker = unique(3)
    nvcc = tools / "nvcc"
    nvcc.write_text(f"#!/bin/sh\nexec sleep {marker}\n")  # the toolkit section never ends
    nvcc.chmod(0o755)
    config = tmp_path / "config.toml"
    config.write_text(
        '[ui]\ntheme = "textual-dark"\n[hosts.box]\ntransport = "local"\n'
        'network_targets = ["http://127.0.0.1:9/"]\nsection_timeout = 120\n'
    )
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "PATH": f"{tools}:{os.environ['PATH']}",
        "GPUDASH_NVML": "0",
        "GPUDASH_FORK_LOCAL": "1",
    }
    env.pop("NO_COLOR", None)
    tmux = Tmux(tmp_path / "tmux.sock")
    command = f"{GPUDASH} --config {config}; sleep 30"
    try:
        start = ["new-session", "-d", "-s", "app", "-x", "100", "-y", "30", command]
        subprocess.run(
            ["tmux", "-S", str(tmux.socket), *start],
            env=env,
            check=True,
            timeout=10,
        )
        tmux.wait_for(lambda s: "0 H200 9.0 sm_90" in s and "probing 6/7" in s)
        pane = int(tmux("display", "-p", "-t", "app", "#{pane_pid}").strip())
        app = subprocess.run(["pgrep", "-P", str(pane)], capture_output=True, text=True)
        app_pid = int(app.stdout.split()[0])
        forked = subprocess.run(["pgrep", "-P", str(app_pid)], capture_output=True, text=True)
        assert forked.stdout.split(), "the round is not in a child of the app"
        assert sleeping(marker)
        tmux("send-keys", "-t", "app", "q")
        deadline = time.monotonic() + 1.0
        while Path(f"/proc/{app_pid}").exists():
            assert time.monotonic() < deadline, "the app did not quit within 1 s"
            time.sleep(0.02)
        deadline = time.monotonic() + 5
        while sleeping(marker):
            assert time.monotonic() < deadline, f"left running: {sleeping(marker)}"
            time.sleep(0.05)
    finally:
        tmux("kill-server")
