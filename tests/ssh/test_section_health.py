"""The health section's shell body, run for real by dash and busybox sh against fake tools that
print real captures (the H200's `nvidia-smi -q`, a public Xid 79 log), and against a dmesg that
is refused, as on hosts with kernel.dmesg_restrict=1."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from gpudash.probe.sections import health
from tests.support import FIXTURES
from tests.support.sectionrun import (
    BASIC_TOOLS,
    SHELL_NAMES,
    bin_dir,
    run_raw,
    run_section,
    script_tool,
    shell_argv,
)

XID_LOG = FIXTURES / "public" / "health" / "xid-journal-79-rtx5080.txt"
H200_Q = FIXTURES / "h200-1x" / "q.txt"


def _host(tmp: Path, dmesg: str) -> dict[str, str]:
    bins = bin_dir(tmp / "bin", (*BASIC_TOOLS, "awk"))
    script_tool(tmp / "bin", "nvidia-smi", f'[ "$*" = -q ] && exec cat {shlex.quote(str(H200_Q))}')
    script_tool(tmp / "bin", "dmesg", dmesg)
    return {"PATH": bins, "HOME": str(tmp)}


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_xids_and_the_h200s_gpu_come_through_the_real_shell(tmp_path: Path, shell: str) -> None:
    env = _host(tmp_path, f"cat {shlex.quote(str(XID_LOG))}")
    parts, h = run_section(health, env, shell=shell_argv(shell))
    assert h.kernel.source == "dmesg" and [e.xid for e in h.kernel.xids] == [79]
    assert h.gpus[0].bus_id == "00000000:00:06.0" and h.driver_version == "580.159.04"
    assert h.memlock_unlimited or h.memlock_kib is not None
    assert parts["fm"].text.strip() == "no NVSwitch" or h.nvswitches


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_a_refused_dmesg_without_journalctl_is_reported_unreadable(
    tmp_path: Path, shell: str
) -> None:
    env = _host(
        tmp_path, 'echo "dmesg: read kernel buffer failed: Operation not permitted"; exit 1'
    )
    _, h = run_section(health, env, shell=shell_argv(shell))
    assert h.kernel.source is None and "Operation not permitted" in h.kernel.why_unreadable


def test_the_section_runs_fast(tmp_path: Path) -> None:
    env = _host(tmp_path, f"cat {shlex.quote(str(XID_LOG))}")
    took = min(run_raw(health, env)[2] for _ in range(3))
    assert took < 0.5, took
