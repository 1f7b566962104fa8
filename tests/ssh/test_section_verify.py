"""The verify section's body under real shells: it reads the file the verify task leaves, and
only that, and the parser turns it into the result (the real H200 run's, from the fixtures)."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from gpudash.model import to_jsonable
from gpudash.probe.sections import verify
from tests.support import FIXTURES
from tests.support.sectionrun import SHELL_NAMES, bin_dir, run_section, shell_argv

REAL = (FIXTURES / "verify" / "h200-1x.json").read_text()


def host(tmp_path, text: str | None):
    home = tmp_path / "home"
    home.mkdir()
    if text is not None:
        path = home / verify.RESULT
        path.parent.mkdir(parents=True)
        path.write_text(text)
    return {"HOME": str(home), "PATH": bin_dir(tmp_path / "bin")}


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_the_last_result_is_read_with_the_hosts_clock(tmp_path, shell):
    before = time.time()
    _parts, data = run_section(verify, host(tmp_path, REAL), shell=shell_argv(shell))
    assert data.result is not None and data.result.status == "ok"
    assert data.result.gpus[0].matmul_tflops == 670.9
    assert before - 2 <= data.host_now <= time.time() + 2
    assert data.age_s() > 0
    assert verify.summary(data).startswith("ok, ")
    assert verify.summary(data).endswith(" ago: 1 GPU(s) 671 TFLOP/s bf16")
    json.dumps(to_jsonable(data))  # `gpudash probe --json` can carry it


def test_no_result_is_not_run_and_not_an_error(tmp_path):
    parts, data = run_section(verify, host(tmp_path, None))
    assert parts["result"].rc == 3
    assert data.result is None and data.notes == ()
    assert verify.summary(data) == (
        "not run (`gpudash run verify HOST` runs it; b then V in the dashboard)"
    )


def test_an_oversized_or_garbled_file_is_unknown(tmp_path):
    _parts, data = run_section(verify, host(tmp_path, " " * (2 << 20)))
    assert data.result.status == "unknown"
    (tmp_path / "b").mkdir()
    _parts, data = run_section(verify, host(tmp_path / "b", '{"status": "ok", "gpus": [[['))
    assert data.result.status == "unknown"
    assert verify.summary(data).startswith("unknown")


def test_the_module_keeps_the_section_contract():
    data = verify.parse({})
    assert dataclasses.is_dataclass(data) and isinstance(data.notes, tuple)
    assert isinstance(verify.TIMEOUT, float) and "part result" in verify.BODY
    json.dumps(dataclasses.asdict(data))
