"""Verify findings (gpudash/checks/verify.py) over the real H200 result and edited copies of it.

Every edited case starts from tests/fixtures/verify/h200-1x.json (the real run) and says what
it changed. The 8-GPU host is that GPU's entry replicated eight times (indices 0-7), since
no 8-GPU result exists yet (issue 22 takes one when such a machine is lent).
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone

import pytest

from gpudash.checks import Severity
from gpudash.checks.verify import Now, judge
from gpudash.checks.verify_expect import BUSBW, PEAKS, pcie_gbps, peak_for
from gpudash.probe.verify import parse_verify
from gpudash.tasks.verify import program as prog
from tests.support import FIXTURES

VERIFY = FIXTURES / "verify"
REAL = json.loads((VERIFY / "h200-1x.json").read_text())
AN_HOUR_LATER = datetime(2026, 12, 3, 21, 33, 13, tzinfo=timezone.utc).timestamp()


def findings(doc: dict, now: Now | None = None):
    return judge(parse_verify(json.dumps(doc)), now)


def codes(found) -> dict[str, Severity]:
    return {f.code: f.severity for f in found}


def eight() -> dict:
    """The real result with its one GPU replicated as GPUs 0-7, and an all-reduce that passed
    at 370 GB/s busbw (the NVLS-off figure for 8x H100/H200 in verify_expect.BUSBW)."""
    doc = copy.deepcopy(REAL)
    doc["gpus"] = [dict(copy.deepcopy(REAL["gpus"][0]), index=i) for i in range(8)]
    doc["torch"]["device_count"] = 8
    doc["expect_gpus"] = 8
    doc["peer"] = [[None if i == j else True for j in range(8)] for i in range(8)]
    doc["nccl"] = {"world": 8, "bytes": 1 << 30, "iters": 10, "ok": True, "busbw_gbps": 370.0}
    return doc


def test_the_real_h200_passes_with_its_age():
    found = findings(
        REAL, Now(gpus=1, driver="580.159.04", torch="2.11.0+cu130", time=AN_HOUR_LATER)
    )
    assert [(f.severity, f.code) for f in found] == [(Severity.OK, "verify.ok")]
    assert found[0].title == (
        "verify passed 1 h ago: 1 GPU(s), 671 TFLOP/s bf16, 4246 GB/s copy (medians)"
    )


def test_the_real_h200_is_above_the_floors_of_its_published_peaks():
    peak = peak_for(REAL["gpus"][0]["name"])
    assert peak is not None and peak.model == "H200 SXM"
    assert (peak.bf16_tflops, peak.mem_gbps) == (989.0, 4800.0)
    g = REAL["gpus"][0]
    assert 0.55 < g["matmul_tflops"] / peak.bf16_tflops < 0.75  # 0.68
    assert 0.80 < g["copy_gbps"] / peak.mem_gbps < 0.95  # 0.88
    assert 0.80 < g["h2d_gbps"] / pcie_gbps(5, 16) < 0.95  # 55.4 of 63


def test_eight_healthy_gpus_pass_with_the_all_reduce_in_the_summary():
    found = findings(eight(), Now(gpus=8, nvlink_all=True))
    assert codes(found) == {"verify.ok": Severity.OK}
    assert found[0].title.endswith("all-reduce busbw 370 GB/s")


@pytest.mark.parametrize(("factor", "severity"), [(0.8, Severity.WARN), (0.6, Severity.FAIL)])
def test_one_slow_gpu_among_eight_is_named(factor, severity):
    doc = eight()
    slow_value = round(doc["gpus"][5]["matmul_tflops"] * factor, 1)
    doc["gpus"][5]["matmul_tflops"] = slow_value  # edit
    found = findings(doc, Now(gpus=8, nvlink_all=True))
    slow = [f for f in found if f.code == "verify.gpu_slow_matmul"]
    assert [(f.severity, f.facts["gpu"]) for f in slow] == [(severity, 5)]
    assert slow[0].title == (
        f"GPU 5 (NVIDIA H200): bf16 matmul {slow_value:.0f} TFLOP/s, {1 - factor:.0%} below "
        "the median of its 7 peer(s) (671)"
    )
    assert slow[0].fix_task == "verify"
    assert "verify.ok" not in codes(found)


def test_a_gpu_just_within_15_percent_of_its_peers_is_not_flagged():
    doc = eight()
    doc["gpus"][2]["copy_gbps"] = round(doc["gpus"][2]["copy_gbps"] * 0.86, 1)  # edit: -14 %
    assert codes(findings(doc, Now(nvlink_all=True))) == {"verify.ok": Severity.OK}


def test_a_whole_host_below_its_models_range_is_a_host_finding_not_a_gpu_one():
    doc = eight()
    for g in doc["gpus"]:
        g["matmul_tflops"] = 450.0  # edit: every GPU at 45 % of the 989 peak
    found = codes(findings(doc, Now(nvlink_all=True)))
    assert found == {"verify.host_slow_matmul": Severity.WARN}
    for g in doc["gpus"]:
        g["copy_gbps"] = 1500.0  # edit: 31 % of 4800, under half the 70 % floor
    assert codes(findings(doc))["verify.host_slow_copy"] is Severity.FAIL


def test_a_missing_arch_fails_with_the_torch_task_as_fix():
    doc = copy.deepcopy(REAL)
    doc["torch"]["arch_list"] = ["sm_80", "sm_86", "sm_100", "sm_120"]  # edit: no sm_90
    verdict, via = prog.arch_coverage((9, 0), doc["torch"]["arch_list"])  # as the program would
    doc["gpus"][0].update(arch=verdict, arch_via=via)
    del doc["gpus"][0]["matmul_tflops"], doc["gpus"][0]["copy_gbps"]  # it measures nothing then
    found = findings(doc)
    (f,) = [f for f in found if f.code == "verify.arch_missing"]
    assert f.severity is Severity.FAIL and f.fix_task == "torch"
    assert f.title == (
        "torch 2.11.0+cu130 has no kernels for sm_90 (its arch list: sm_80 sm_86 sm_100 sm_120)"
    )


def test_ptx_only_is_a_warning():
    doc = copy.deepcopy(REAL)
    doc["torch"]["arch_list"] = ["sm_80", "compute_80"]  # edit
    verdict, via = prog.arch_coverage((9, 0), doc["torch"]["arch_list"])
    doc["gpus"][0].update(arch=verdict, arch_via=via)
    assert codes(findings(doc)) == {"verify.arch_ptx": Severity.WARN}


@pytest.mark.parametrize(("busbw", "severity"), [(250.0, Severity.WARN), (120.0, Severity.FAIL)])
def test_low_busbw_on_an_nvlink_board_is_judged_against_its_fabric(busbw, severity):
    doc = eight()
    doc["nccl"]["busbw_gbps"] = busbw  # edit
    found = findings(doc, Now(nvlink_all=True))
    (f,) = [f for f in found if f.code == "verify.busbw_low"]
    assert f.severity is severity
    assert f.title == (
        f"all-reduce busbw {busbw:.0f} GB/s over 8 GPUs, below the 330-380 GB/s published "
        "for nvlink4 (NVLS off)"
    )


def test_busbw_is_not_judged_without_all_pairs_nvlink():
    doc = eight()
    doc["nccl"]["busbw_gbps"] = 40.0  # edit: a PCIe-class figure
    reasons = {False: "not every GPU pair is on NVLink", None: "the topology is unknown"}
    for nvlink, reason in reasons.items():
        found = findings(doc, Now(nvlink_all=nvlink))
        assert codes(found) == {"verify.ok": Severity.OK, "verify.busbw_unjudged": Severity.INFO}
        (f,) = [f for f in found if f.code == "verify.busbw_unjudged"]
        assert (f.code, f.severity) == ("verify.busbw_unjudged", Severity.INFO)
        assert f.title.endswith(f"(not judged: {reason})")


def test_a_failed_all_reduce_fails_with_its_error():
    doc = eight()
    doc["nccl"] = {"world": 8, "ok": False, "error": "DistBackendError: NCCL error in: ..."}
    (f,) = [f for f in findings(doc) if f.code == "verify.nccl_failed"]
    assert f.severity is Severity.FAIL
    assert f.title == "NCCL all-reduce over 8 GPUs failed: DistBackendError: NCCL error in: ..."


def test_a_failing_flashinfer_import_fails_with_its_first_real_error_line():
    doc = copy.deepcopy(REAL)
    # edit: an engine entry as run_engines writes it; the error text is flashinfer's from
    # https://github.com/flashinfer-ai/flashinfer/issues/382 (built against another torch).
    error = (
        "ImportError: /v/flashinfer/_kernels.so: undefined symbol: _ZN3c1021throwNullDataPtrErrorEv"
    )
    doc["engines"] = [
        {"name": "flashinfer", "version": "0.1.6", "import_ok": False, "error": error},
        {"name": "sgl_kernel", "version": "0.3.5", "import_ok": True, "op_ok": True},
    ]
    found = findings(doc)
    (f,) = [f for f in found if f.code == "verify.engine_failed"]
    assert f.severity is Severity.FAIL and f.fix_task == "serving"
    assert f.title == f"flashinfer 0.1.6 does not import: {error}"


def test_a_wrong_op_result_fails_the_engine():
    doc = copy.deepcopy(REAL)
    doc["engines"] = [  # edit
        {"name": "sgl_kernel", "version": "0.3.5", "import_ok": True, "op": "sgl_kernel.rmsnorm",
         "op_ok": False, "error": "wrong result: max abs error 3.1"},
    ]  # fmt: skip
    (f,) = [f for f in findings(doc) if f.code == "verify.engine_failed"]
    assert f.title == "sgl_kernel 0.3.5 sgl_kernel.rmsnorm failed: wrong result: max abs error 3.1"


def test_h2d_far_below_the_link_is_a_warning():
    doc = copy.deepcopy(REAL)
    doc["gpus"][0]["h2d_gbps"] = 14.2  # edit: a Gen5 x16 link carrying Gen3 x16's worth
    (f,) = [f for f in findings(doc) if f.code == "verify.h2d_low"]
    assert f.severity is Severity.WARN
    assert f.title == "GPU 0: H2D 14.2 GB/s, under 50% of its PCIe Gen5 x16 link (63 GB/s)"


def test_a_kernel_error_or_a_wrong_matmul_fails_that_gpu():
    doc = eight()
    error = "RuntimeError: CUDA error: an illegal memory access was encountered"
    doc["gpus"][3] = {"index": 3, "name": "NVIDIA H200", "error": error}  # edit
    doc["gpus"][6].update(matmul_ok=False, matmul_rel_err=0.9)  # edit
    found = findings(doc, Now(nvlink_all=True))
    assert {(f.code, f.facts.get("gpu")) for f in found if f.severity is Severity.FAIL} == {
        ("verify.gpu_error", 3),
        ("verify.wrong_result", 6),
    }


def test_the_real_no_torch_and_busy_and_count_results():
    notorch = judge(parse_verify((VERIFY / "h200-notorch.json").read_text()))
    assert [(f.code, f.fix_task) for f in notorch] == [("verify.torch_import", "torch")]
    assert notorch[0].title == (
        "torch does not import in /usr/bin/python3: ModuleNotFoundError: No module named 'torch'"
    )
    busy = judge(parse_verify((VERIFY / "h200-busy.json").read_text()))
    assert [(f.code, f.severity) for f in busy] == [("verify.refused", Severity.WARN)]
    count = judge(parse_verify((VERIFY / "h200-count2.json").read_text()), Now(gpus=1))
    assert codes(count) == {"verify.gpu_count": Severity.FAIL}
    assert count[0].title == "CUDA sees 1 GPU(s), the driver reports 2"


def test_a_result_older_than_the_driver_or_torch_is_stale():
    now = Now(driver="590.48.01", torch="2.12.0+cu130", time=AN_HOUR_LATER)
    stale = [f for f in findings(REAL, now) if f.code == "verify.stale"]
    assert [f.severity for f in stale] == [Severity.WARN]
    assert stale[0].title == (
        "the last verify result 1 h ago predates a change: driver 580.159.04 -> 590.48.01, "
        "torch 2.11.0+cu130 -> 2.12.0+cu130"
    )


def test_no_result_and_an_unreadable_result_are_never_ok():
    (never,) = judge(None)
    assert (never.code, never.severity, never.fix_task) == (
        "verify.not_run",
        Severity.INFO,
        "verify",
    )
    (bad,) = judge(parse_verify("{garbled"))
    assert (bad.code, bad.severity) == ("verify.unreadable", Severity.WARN)


def test_a_failure_no_check_names_still_fails():
    doc = copy.deepcopy(REAL)
    doc.update(status="fail", failures=["verify itself broke: KeyError: 'x'"])  # edit
    assert codes(findings(doc)) == {"verify.failed": Severity.FAIL}


def test_every_table_row_has_a_source_and_sane_figures():
    assert {p.model for p in PEAKS} >= {
        "H100 SXM", "H200 SXM", "B200", "B300", "A100 SXM", "L40S", "RTX 4090", "RTX 5090",
        "RTX PRO 6000",
    }  # fmt: skip
    for p in PEAKS:
        assert p.source and 100 < p.bf16_tflops < 5000 and 500 < p.mem_gbps < 10_000, p
        assert p.fabric is None or p.fabric in BUSBW
    for r in BUSBW.values():
        assert r.source and 0 < r.low < r.high


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", None),
        ("Tesla T4", None),
        (None, None),
    ],
)
def test_gpu_names_find_their_row(name, model):
    peak = peak_for(name)
    assert (peak.model if peak else None) == model


def test_a_forced_run_says_its_figures_were_taken_beside_other_processes():
    # The real run with --force while another process held 2 GiB and computed (fixture README).
    found = judge(parse_verify((VERIFY / "h200-forced.json").read_text()))
    assert codes(found) == {"verify.forced": Severity.INFO, "verify.ok": Severity.OK}
    assert "552 TFLOP/s" in next(f.title for f in found if f.code == "verify.ok")
