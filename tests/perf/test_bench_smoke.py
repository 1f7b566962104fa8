"""Every benchmark still runs (issue 30, item 6): each module under bench/ declares a smoke
size (`SMOKE`, the argument lists that run it in seconds) and this test runs it, as
`python -m bench.NAME ARGS...` in a process of its own, exactly as the bench's docstring says
to run it. A refactor that breaks a bench is then a red test here, not an ImportError found
months later when someone wants to re-run the README's comparison.

Only the bench runs, at a size too small for its figures to mean anything: no speed is
asserted, only that it got to its table (exit 0, something printed, no traceback).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

# Modules of bench/ that are not benchmarks, each with the reason it has no smoke size.
NOT_BENCHES = {
    "__init__": "the package",
    # `down` removes every persistent rig on the machine, other runs' too; what it drives
    # (NetRig) is tested by tests/rig/test_faults_rig.py
    "netrig": "a tool that brings rig hosts up and leaves them running",
}
TIMEOUT_S = 180


def bench_names() -> list[str]:
    return sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in NOT_BENCHES)


def test_the_list_of_benches_is_the_folder():
    assert bench_names(), "no bench found under bench/"
    assert set(NOT_BENCHES) <= {p.stem for p in BENCH.glob("*.py")}, "a stale exception"


@pytest.mark.parametrize("name", bench_names())
def test_every_bench_runs_at_its_smoke_size(name: str):
    module = importlib.import_module(f"bench.{name}")
    smoke = getattr(module, "SMOKE", None)
    assert smoke, f"bench/{name}.py has no SMOKE: give it a size that runs in seconds"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    for args in smoke:
        done = subprocess.run(
            [sys.executable, "-m", f"bench.{name}", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        said = (
            f"python -m bench.{name} {' '.join(args)}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
        assert done.returncode == 0, said
        assert done.stdout.strip(), said
        assert "Traceback" not in done.stderr, said
