"""The verify task's shell body under a real shell, with the real program, in a venv without
torch (this test venv has none): one clear FAIL line, and the JSON at the job dir and at the
fixed path the probe's verify section reads, which reads it back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from gpudash.checks.verify import judge
from gpudash.probe.sections import verify as section
from gpudash.tasks.verify import BODY, PROGRAM, RESULT_DIR
from tests.support.sectionrun import run_section


def run_body(tmp_path, venv):
    job = tmp_path / "job"
    (job / "files").mkdir(parents=True, exist_ok=True)
    shutil.copy(PROGRAM, job / "files" / "program.py")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "GPUDASH_JOB": str(job),
        "GPUDASH_VENV": str(venv),
        "GPUDASH_EXPECT_GPUS": "8",
    }
    run = subprocess.run(["/bin/sh", "-c", BODY], env=env, capture_output=True, text=True)
    return run, job, home


def test_a_venv_without_torch_fails_with_one_line_and_leaves_its_result(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)  # a python without torch
    run, job, home = run_body(tmp_path, venv)
    assert run.returncode == 1
    assert "Traceback" not in run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == (
        f"verify: FAIL: torch does not import in {venv}/bin/python: "
        "ModuleNotFoundError: No module named 'torch'"
    )
    assert lines[-1] == f"verify: result kept at {home / RESULT_DIR}/last.json"
    assert (job / "result.json").read_bytes() == (home / RESULT_DIR / "last.json").read_bytes()
    _parts, data = run_section(section, {"HOME": str(home), "PATH": os.environ["PATH"]})
    assert data.result.status == "fail" and data.result.expect_gpus == 8
    (finding,) = judge(data.result)
    assert finding.code == "verify.torch_import" and finding.fix_task == "torch"


def test_no_python_in_the_venv_is_one_line_and_removes_the_old_result(tmp_path):
    old = tmp_path / "home" / RESULT_DIR / "last.json"
    old.parent.mkdir(parents=True)
    old.write_text('{"status": "ok"}')
    run, _job, home = run_body(tmp_path, tmp_path / "nowhere")
    assert run.returncode == 1
    assert run.stdout == (
        f"verify: FAIL: no python at {tmp_path}/nowhere/bin/python "
        "(run the venv and torch tasks first)\n"
    )
    assert not old.exists()
    _parts, data = run_section(section, {"HOME": str(home), "PATH": os.environ["PATH"]})
    assert data.result is None
