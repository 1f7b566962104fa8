"""`gpudash run verify` end to end over the test sshd, up to where torch is needed.

The host's serving venv has a python but no torch (its python is this test venv's, which has
none), as on a host where the torch task never ran or failed: the real program is shipped in
the job, fails with one clear line streamed as `h0 | ...`, and leaves its JSON in the job dir
and at the fixed path the probe's verify section reads; that section reads it back.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from gpudash.checks.verify import judge
from gpudash.cli.main import main
from gpudash.probe.sections import verify as section
from gpudash.tasks.prepare import Facts, prepare
from gpudash.tasks.spec import load_tasks
from gpudash.tasks.verify import PROGRAM, RESULT_DIR
from tests.support import FIXTURES, fakegpu
from tests.support.sectionrun import run_section
from tests.support.sshd import FakeHost, Sshd

# The built-in task as a config would leave it, but with nothing before it (no torch task)
# and the venv in the fake host's home.
TASKS = """
[tasks.verify]
needs = []
params = {{ venv = "{venv}" }}
"""


def serve_venv(host: FakeHost) -> Path:
    venv = host.home / "venvs" / "serve"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    return venv


def test_run_verify_without_torch_fails_with_one_line_and_leaves_the_result(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    venv = serve_venv(fake_host)
    fakegpu.install(fake_host.bin_dir, FIXTURES / "h200-1x")  # verify is refused without a GPU
    config = tmp_path / "c.toml"
    config.write_text(sshd.host_toml(fake_host) + TASKS.format(venv=venv))
    assert main(["run", "verify", "h0", "--config", str(config)]) == 1
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if line.startswith("h0 | verify: ")]
    assert lines[0] == (
        f"h0 | verify: FAIL: torch does not import in {venv}/bin/python: "
        "ModuleNotFoundError: No module named 'torch'"
    )
    last = fake_host.home / RESULT_DIR / "last.json"
    assert lines[-1] == f"h0 | verify: result kept at {last}"
    assert any(line.startswith("h0 | == verify: failed rc=1 (") for line in out)
    assert "Traceback" not in "\n".join(out)
    jobs = fake_host.home / ".cache" / "gpudash" / "jobs" / "verify"
    assert (jobs / "files" / "program.py").read_bytes() == PROGRAM.read_bytes()
    assert json.loads((jobs / "result.json").read_text()) == json.loads(last.read_text())
    _parts, data = run_section(section, {"HOME": str(fake_host.home), "PATH": "/usr/bin:/bin"})
    assert data.result.status == "fail" and data.age_s() is not None
    (finding,) = judge(data.result)
    assert (finding.code, finding.fix_task) == ("verify.torch_import", "torch")
    # And the probe reads it back over the same sshd: `gpudash check` names it.
    assert main(["check", "h0", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  verify.torch_import: torch does not import in " in out
    assert main(["probe", "h0", "--config", str(config)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if " verify" in x]
    assert re.fullmatch(r"h0 │ verify +fail, \d+ s ago: nothing measured", line)


def test_prepare_ships_the_program_and_the_gpu_count_the_driver_lists():
    spec = load_tasks()["verify"]
    prepared = prepare(spec, Facts(driver_cuda="13.0", ccs=("9.0",) * 8, known=True, gpus=8))
    assert prepared.files == {"program.py": PROGRAM.read_text()}
    assert "export GPUDASH_EXPECT_GPUS=8\n" in prepared.script
    assert "export GPUDASH_FORCE=0\n" in prepared.script
    assert (spec.key, spec.needs, spec.timeout) == ("V", ("torch",), 900.0)
    unknown = prepare(spec, Facts())
    assert "export GPUDASH_EXPECT_GPUS" not in unknown.script
