"""A system tool missing from the machine fails only the tests that run it, each in one line;
the collection of the suite never depends on one (issue 33, item 2: two modules called
`busybox_sh()` at import, and without busybox 0 of 1362 tests ran). Checked by running pytest
in a subprocess with a PATH that has every tool of this machine but busybox."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def path_without(tmp_path: Path, tool: str) -> str:
    """A PATH of one directory linking every command on this PATH except `tool`."""
    bins = tmp_path / "bin"
    bins.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not Path(directory).is_dir():
            continue
        for entry in Path(directory).iterdir():
            link = bins / entry.name
            if entry.name != tool and not link.exists() and os.access(entry, os.X_OK):
                link.symlink_to(entry)
    return str(bins)


def pytest_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PATH": path_without(tmp_path, "busybox"), "PYTHONPATH": str(ROOT)}
    environ["COLUMNS"] = "400"  # the short summary prints each failure whole
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=300,
    )


def test_without_busybox_the_whole_suite_still_collects(tmp_path: Path) -> None:
    done = pytest_run(tmp_path, "--collect-only", "-q", "tests")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "error" not in done.stdout.splitlines()[-1], done.stdout[-3000:]


def test_without_busybox_only_the_busybox_runs_fail_each_in_one_line(tmp_path: Path) -> None:
    done = pytest_run(
        tmp_path,
        "-q",
        "-rf",
        "tests/ssh/test_section_health.py",
        "tests/ssh/test_section_verify.py",
    )
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert failed, done.stdout[-3000:]
    assert all("[busybox]" in line for line in failed), failed
    assert all("busybox is not installed: `apt-get install -y busybox`" in f for f in failed)
    summary = done.stdout.splitlines()[-1]
    assert " passed" in summary and "error" not in summary, summary
    assert "[sh]" not in "\n".join(failed)
