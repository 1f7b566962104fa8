"""`gpudash check` prints each host's findings as soon as they are final, over the real sshd:
a host whose nvidia-smi hangs holds back only its own block (and its tag group's)."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.sshd import FakeHost, Sshd

GPUDASH = Path(sys.executable).with_name("gpudash")
NET = 'network_targets = ["http://127.0.0.1:9/"]\n'


def gated_smi(host: FakeHost, gate: Path) -> Path:
    """An nvidia-smi that waits for `gate` (a wedged driver the test can release)."""
    called = host.home / "smi-called"
    host.write_tool(
        "nvidia-smi",
        f'#!/bin/sh\ntouch "{called}"\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done\nexit 9\n',
    )
    return called


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[str | None]:
    out: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line.rstrip("\n"))
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


def until_line(out: queue.Queue[str | None], prefix: str, timeout: float = 60) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        line = out.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, f"ended before a line starting {prefix!r}: {seen}"
        seen.append(line)
        if line.startswith(prefix):
            return seen


def test_a_hung_host_does_not_hold_back_the_findings_of_the_others(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path
):
    gate = tmp_path / "gate"
    called = gated_smi(fake_hosts[1], gate)
    config = tmp_path / "c.toml"
    config.write_text("".join(sshd.host_toml(h) + NET for h in fake_hosts[:3]))
    # h2 shares a tag with the hung h1: its findings compare with h1's, so they wait for it
    config.write_text(config.read_text().replace("[hosts.h2]\n", '[hosts.h2]\ntags = ["pool"]\n'))
    # h1 hangs until released, never until a timeout: only streaming shows h0 before that
    hung = '[hosts.h1]\ntags = ["pool"]\nsection_timeout = 300\nprobe_timeout = 300\n'
    config.write_text(config.read_text().replace("[hosts.h1]\n", hung))
    proc = subprocess.Popen(
        [str(GPUDASH), "--config", str(config), "check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out = lines_of(proc)
        before = until_line(out, "h0: ")  # h1 hangs (or has yet to reach nvidia-smi)
        assert not any(line.startswith(("h1: ", "h2: ")) for line in before)
        deadline = time.monotonic() + 60
        while not called.exists():  # release h1 only once it does hang
            assert time.monotonic() < deadline, "h1 never ran nvidia-smi"
            time.sleep(0.02)
        gate.touch()
        after = until_line(out, "h2: ")
        assert any(line.startswith("h1: ") for line in after)
        # released by the gate, not by its section's timeout: h0 came while h1 still hung
        assert not any("timed out" in line for line in after), after
        assert proc.wait(timeout=60) in (0, 1)
    finally:
        gate.touch()
        proc.kill()
        proc.wait()
