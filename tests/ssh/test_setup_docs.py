"""The README's set-up commands are the ones CI runs, and a missing system tool reads the same
everywhere: the test that needs it fails in one line naming the package (issue 23, item 19)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.tools import PACKAGES

ROOT = Path(__file__).resolve().parents[2]


def _test_command() -> str:
    """The code block after "Run the whole test suite" in the README's set-up."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    after = readme[readme.index("Run the whole test suite") :]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    assert block is not None
    return block.group(1)


def test_the_readme_test_command_is_one_line_that_installs_every_package_then_runs_pytest():
    block = _test_command()
    assert block.count("\n") == 1, block  # one line: copy, paste, run
    steps = [s.strip() for s in block.strip().split("&&")]
    assert steps[-1] == ".venv/bin/python -m pytest"
    install = next(shlex.split(s) for s in steps if "apt-get install" in s)
    assert "-y" in install
    assert set(PACKAGES.values()) <= set(install), set(PACKAGES.values()) - set(install)


def test_ci_runs_the_readme_test_command_verbatim():
    assert _test_command().strip() in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_no_test_skips_for_a_missing_tool():
    skips = re.compile(r"(pytest\.skip\(|skipif\()[^\n]*(install|which\()")
    found = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if path.name != "test_setup_docs.py" and skips.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_a_missing_tool_fails_the_test_in_one_line_naming_its_package(tmp_path: Path):
    (tmp_path / "test_needs_busybox.py").write_text(
        "from tests.support.tools import busybox_sh\n\ndef test_it():\n    busybox_sh()\n"
    )
    environ = {**os.environ, "PATH": str(tmp_path / "empty"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", str(tmp_path)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout  # failed, not skipped (exit 0)
    said = [line for line in done.stdout.splitlines() if "busybox is not installed" in line]
    assert said and "`apt-get install -y busybox`" in said[0]
    assert "Traceback" not in done.stdout
