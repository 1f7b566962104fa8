"""`gpudash probe` text with several hosts: each host's lines come as one block, as soon as
that host has finished (issue 23, item 16), over the real sshd."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpudash.probe.registry import SECTION_NAMES
from tests.support import FIXTURES
from tests.support.sshd import FakeHost, Sshd

NET = 'network_targets = ["http://127.0.0.1:9/"]\n'


def test_hosts_lines_come_in_one_block_each_in_the_order_they_finish(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path
):
    slow, fast = fake_hosts[0], fake_hosts[1]
    smi = FIXTURES / "h200-1x" / "smi.txt"
    # The slow host's system section arrives at once, its GPU sections 4 s later: a stream of
    # lines would put the fast host's whole probe between them.
    slow.write_tool("nvidia-smi", f"#!/bin/sh\nsleep 4\nexec cat {smi}\n")
    config = tmp_path / "config.toml"
    config.write_text(sshd.host_toml(slow, "slow") + NET + sshd.host_toml(fast, "fast") + NET)
    env = {**os.environ}
    run = subprocess.run(
        [sys.executable, "-m", "gpudash", "probe", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    hosts = [line.split("│")[0].strip() for line in run.stdout.splitlines() if "│" in line]
    # contiguous blocks; fast first unless this machine is so loaded that it took 4 s
    n = len(SECTION_NAMES)  # a line per section
    assert hosts in (["fast"] * n + ["slow"] * n, ["slow"] * n + ["fast"] * n), run.stdout
    assert run.stdout.splitlines()[-1] == "2 of 2 hosts answered"

    mixed = subprocess.run(
        [sys.executable, "-m", "gpudash", "probe", "--interleave", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    order = [line.split("│")[0].strip() for line in mixed.stdout.splitlines() if "│" in line]
    assert sorted(order) == sorted(hosts)  # the same lines, each printed as it came
