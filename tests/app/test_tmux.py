"""The installed `gpudash` in a real tmux session at 100x30, against a fake host over the
real test sshd: what a user sees, read back with `capture-pane`, and a clean quit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpudash.probe.registry import SECTION_NAMES
from tests.support import FIXTURES, fakegpu
from tests.support.configs import table, write_config
from tests.support.sshd import Sshd
from tests.support.tools import require

FIX = FIXTURES
CAPTURES = {
    "topo_m.txt": FIX / "public" / "topo-h200-8x-nv18-12nic-tabs.txt",
    "query_csv.txt": FIX / "saved" / "sources" / "query-h200-8x-derived.txt",
    "smi.txt": FIX / "h200-1x" / "smi.txt",
    "nvcc.txt": FIX / "h200-1x" / "nvcc.txt",
}
GPUDASH = Path(sys.executable).with_name("gpudash")


@pytest.fixture(autouse=True)
def _tmux_installed() -> None:
    require("tmux")  # fails, never skips, naming the package


class Tmux:
    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        proc = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=10
        )
        return proc.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "app")

    def wait_for(self, condition: Callable[[str], bool], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if condition(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"screen never matched; last screen:\n{text}")
            time.sleep(0.05)

    def alive(self) -> bool:
        return self("list-panes", "-t", "app", "-F", "#{pane_dead}").strip() == "0"


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    session = Tmux(tmp_path / "tmux.sock")
    yield session
    session("kill-server")


def probe_processes() -> list[str]:
    """Probe scripts still running on this machine (the fake hosts are this machine)."""
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "/gpudash." in line and ".sh" in line]


def test_gpudash_in_tmux_shows_the_host_the_fleet_and_quits_clean(
    sshd: Sshd, tmux: Tmux, tmp_path: Path
) -> None:
    host = sshd.hosts[0]
    host.reset()
    fakegpu.install(host.bin_dir, CAPTURES)
    # A second tool that never answers: quitting must not wait for it, nor leave it behind.
    host.write_tool("nvcc", "#!/bin/sh\nexec sleep 300\n")
    config = tmp_path / "config.toml"
    box = sshd.host_toml(
        host,
        "gpu-box",
        network_targets=["http://127.0.0.1:9/"],
        section_timeout=120,
        probe_timeout=300,
    )
    write_config(config, table("ui", {"theme": "textual-dark"}), box)
    env = {**os.environ, "TERM": "xterm-256color", "GPUDASH_CONFIG": str(config)}
    env.pop("NO_COLOR", None)
    tmux.socket.parent.mkdir(exist_ok=True)
    subprocess.run(
        [
            "tmux",
            "-S",
            str(tmux.socket),
            "new-session",
            "-d",
            "-s",
            "app",
            "-x",
            "100",
            "-y",
            "30",
            f"{GPUDASH}; sleep 30",
        ],
        env=env,
        check=True,
        timeout=10,
    )
    # Everything but toolkit (which hangs on the slow nvcc) arrives; the screen keeps up.
    probing = f"probing {len(SECTION_NAMES) - 1}/{len(SECTION_NAMES)}"
    screen = tmux.wait_for(lambda s: "all 28 pairs NV18" in s and probing in s)
    assert "gpu-box" in screen and "8 GPUs · Hopper" in screen
    assert len(screen.splitlines()) == 30
    tmux("send-keys", "-t", "app", "f")
    screen = tmux.wait_for(lambda s: "fleet" in s and "sorted by" in s)
    assert "8× H200" in screen
    tmux("send-keys", "-t", "app", "Escape")
    tmux.wait_for(lambda s: "nearest NIC" in s)  # the host view again, not the fleet
    assert probe_processes(), "the slow section should still be running before quitting"
    start = time.monotonic()
    tmux("send-keys", "-t", "app", "q")
    # The shell prompt-less `sleep 30` keeps the pane; gpudash is gone once the screen clears.
    tmux.wait_for(lambda s: "all 28 pairs" not in s and "gpu-box" not in s, timeout=3)
    assert time.monotonic() - start < 1.5  # 1 s budget, plus tmux polling
    # The probe script notices the closed channel at its next heartbeat (1 s) and stops
    # every section it started.
    deadline = time.monotonic() + 3
    while probe_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = probe_processes()
    for pid in _pids_of(left):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    assert left == [], f"probe processes outlived the quit: {left}"


def _pids_of(lines: list[str]) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pgid,args"], capture_output=True, text=True).stdout
    return sorted(
        {
            int(row.split(None, 1)[0])
            for row in out.splitlines()[1:]
            if row.split(None, 1)[1:] and row.split(None, 1)[1] in lines
        }
    )
