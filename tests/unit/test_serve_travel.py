"""The serve modules that travel to the host run there alone: with only the job's files/
folder on sys.path (no gpudash), under the venv's python, which may be as old as 3.9."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudash.tasks.kinds.serve import SERVE_DIR, TRAVELLING

PRESENT = [name for name in TRAVELLING if (SERVE_DIR / name).is_file()]


@pytest.mark.parametrize("name", PRESENT)
def test_a_travelling_module_parses_as_python_3_9(name: str) -> None:
    ast.parse((SERVE_DIR / name).read_text(encoding="utf-8"), feature_version=(3, 9))


def test_the_supervisor_starts_from_the_job_files_alone(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    for name in PRESENT:
        shutil.copy(SERVE_DIR / name, files / name)
    run = subprocess.run(
        [sys.executable, "-I", "-S", "-B", str(files / "supervisor.py"), "--engine", "tgi"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=30,
    )
    # -S: no site-packages, so no gpudash (installed editable there) and no third-party
    # package: it imported every sibling alone, then refused the engine in one line
    assert (run.returncode, run.stderr) == (2, "")
    assert run.stdout == (
        "gpudash-serve: engine 'tgi': expected one of ('sglang', 'vllm', 'transformers')\n"
    )


def test_an_engine_line_never_passes_for_the_supervisors_own(capsys) -> None:  # type: ignore[no-untyped-def]
    from argparse import Namespace

    from gpudash.serve.engine_run import EngineRun

    run = EngineRun(Namespace(engine="vllm"), [], 1, "m", None, "/dev/null", print)
    run.feed(b'gpudash-serve: ready {"ttft_ms": 1}\n')
    run.feed(b"INFO: fine\n")
    assert capsys.readouterr().out == '  gpudash-serve: ready {"ttft_ms": 1}\nINFO: fine\n'
