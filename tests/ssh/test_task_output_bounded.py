"""A task's output that is one endless line: gpudash keeps its head and counts the rest, so
its memory does not grow with the line (measured as the process's own peak RSS)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.ssh.test_tasks_cli import write_config
from tests.support.peakrss import gpudash_argv, peak_kib
from tests.support.sshd import FakeHost, Sshd

NUL_TASK = """
[tasks.nul]
title = "four megabytes of NUL bytes, no newline"
kind = "script"
run = 'head -c 4000000 /dev/zero'
"""


def test_four_megabytes_of_nul_without_a_newline_keep_gpudash_small(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
):
    config = write_config(sshd, [fake_host], tmp_path / "c.toml", NUL_TASK)
    rss = tmp_path / "rss"
    done = subprocess.run(
        gpudash_argv(rss, "run", "nul", fake_host.name, "--yes", "--config", config),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    peak = peak_kib(rss)
    assert 0 < peak < 200 * 1024, f"peak RSS {peak / 1024:.0f} MB"
    line = next(x for x in done.stdout.decode().splitlines() if "^@" in x)
    assert line.endswith(" … (3934464 more characters)")  # 4,000,000 - 65,536
    assert len(line) < 70_000
