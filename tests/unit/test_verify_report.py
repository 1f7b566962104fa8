"""Verify through the whole check and report path: the real H200 result as the verify
section's part, judged beside the other sections by `run_checks`, in `gpudash report`."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone

from gpudash.checks import Severity, run_checks
from gpudash.report import render_json, render_markdown
from tests.support import FIXTURES
from tests.support.hosts import host

REAL = json.loads((FIXTURES / "verify" / "h200-1x.json").read_text())
FINISHED = datetime(2026, 12, 3, 20, 33, 13, tzinfo=timezone.utc).timestamp()  # the run's end
AN_HOUR_LATER = str(int(FINISHED) + 3600)  # the host's clock at the probe


def with_verify(doc: dict, base: str = "h200-1x"):
    return host(base, verify={"result": json.dumps(doc), "clock": AN_HOUR_LATER})


def test_the_real_result_passes_beside_the_probe_that_saw_the_same_driver_and_torch():
    findings = run_checks(with_verify(REAL))
    (ok,) = [f for f in findings if f.family == "verify"]
    assert (ok.severity, ok.title) == (
        Severity.OK,
        "verify passed 1 h ago: 1 GPU(s), 671 TFLOP/s bf16, 4246 GB/s copy (medians)",
    )


def test_the_report_has_the_verify_table_and_its_age():
    result = with_verify(REAL)
    text = render_markdown(result, run_checks(result))
    section = text.split("## Verify\n\n", 1)[1]
    assert section.startswith(
        "Status **ok**, 1 h ago; torch 2.11.0+cu130 (CUDA 13.0), driver 580.159.04, "
        "python `/opt/torch/.venv/bin/python3`."
    )
    assert "| 0 | NVIDIA H200 | sass | 671 | 4246 | 55.4 / 55.2 | ok |" in section
    doc = render_json(result, run_checks(result))
    assert doc["sections"]["verify"]["result"]["gpus"][0]["matmul_tflops"] == 670.9


def test_a_torch_upgrade_after_the_run_makes_it_stale_with_the_verify_key():
    doc = copy.deepcopy(REAL)
    doc["torch"]["version"] = "2.10.0+cu130"  # edit: measured with an older torch than now
    (stale,) = [f for f in run_checks(with_verify(doc)) if f.code == "verify.stale"]
    assert stale.severity is Severity.WARN and (stale.fix_task, stale.fix_key) == ("verify", "V")
    # The probe reads torch's dist-info version, which has no +cu130 tag.
    assert stale.title == (
        "the last verify result 1 h ago predates a change: torch 2.10.0+cu130 -> 2.11.0"
    )


def test_a_failing_flashinfer_import_is_a_fail_in_check_and_report_with_the_serving_key():
    doc = copy.deepcopy(REAL)
    error = "ImportError: undefined symbol: _ZN3c1021throwNullDataPtrErrorEv"  # flashinfer#382
    doc["engines"] = [
        {"name": "flashinfer", "version": "0.1.6", "import_ok": False, "error": error}
    ]
    doc["status"] = "fail"  # edit: as the program reports an engine that fails
    result = with_verify(doc)
    findings = run_checks(result)
    (fail,) = [f for f in findings if f.code == "verify.engine_failed"]
    assert (fail.severity, fail.fix_key) == (Severity.FAIL, "s")
    text = render_markdown(result, findings)
    shown = error.replace("_", "\\_")  # Markdown-escaped, as every remote value in a report
    assert f"- **FAIL** `verify.engine_failed`: flashinfer 0.1.6 does not import: {shown}" in text
    assert f"- flashinfer 0.1.6: failed: {shown}" in text


def test_one_slow_gpu_on_the_8_gpu_board_names_it_with_the_verify_key():
    doc = copy.deepcopy(REAL)
    doc["gpus"] = [dict(REAL["gpus"][0], index=i) for i in range(8)]  # edit: 8 copies
    doc["gpus"][2]["matmul_tflops"] = 500.0  # edit: GPU 2 25 % below its peers
    doc["expect_gpus"] = 8
    doc["torch"]["device_count"] = 8
    findings = run_checks(with_verify(doc, "dgx-h200"))
    (slow,) = [f for f in findings if f.code == "verify.gpu_slow_matmul"]
    assert (slow.severity, slow.fix_key, slow.facts["gpu"]) == (Severity.WARN, "V", 2)


def test_a_host_probed_without_the_verify_section_gets_no_verify_finding():
    assert [f for f in run_checks(host("h200-1x")) if f.family == "verify"] == []
    result = host("h200-1x", verify={"clock": AN_HOUR_LATER, "result": None})
    assert [f.code for f in run_checks(result) if f.family == "verify"] == []


def test_the_run_through_gpudash_on_the_h200_reads_back_as_the_device_printed_it():
    # tests/fixtures/verify/device3.log: gpudash run verify, then gpudash probe --json, there.
    probe = json.loads((FIXTURES / "verify" / "h200-1x-probe.json").read_text())
    section = probe["hosts"][0]["sections"]["verify"]
    assert section["error"] is None
    stored = json.loads((FIXTURES / "verify" / "h200-1x-gpudash-run.json").read_text())
    assert stored["expect_gpus"] == 1 and stored["status"] == "ok"
    data = section["data"]["result"]
    assert data["gpus"][0]["matmul_tflops"] == stored["gpus"][0]["matmul_tflops"] == 694.7
    assert data["executable"] == "/opt/torch/.venv/bin/python"
    log = (FIXTURES / "verify" / "device3.log").read_text()
    assert "localhost │ verify   ok, 3 s ago: 1 GPU(s) 695 TFLOP/s bf16" in log
