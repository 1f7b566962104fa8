"""Volta and FlashInfer verdicts (issue 31, item 7).

Which published torch builds carry sm_70, release by release, as PyTorch's own sources say
(each in gpudash/checks/facts/torch_builds.py): CUDA 12.6 builds always (until 12.6 goes in
2.15, pytorch/pytorch#190385); CUDA 12.8 in 2.8 to 2.10 (sm_70 put back by #157517, kept in
.ci/manywheel/build_cuda.sh @00c7a380 for 12.8 and 12.9; 2.10.0+cu128's get_arch_list() in
#182250), not in 2.7 (#147607) nor 2.11 (#172352, and the real 2.11.0+cu128 wheel); CUDA 13
never (CUDA 13 cannot target below sm_75). A V100 host is the real `Tesla V100-SXM2-16GB, 7.0`
capture (tests/fixtures/public/SOURCES.md)."""

from __future__ import annotations

import pytest

from gpudash.checks import run_checks
from gpudash.checks.engine_fit import engine_runs_here
from gpudash.checks.facts.torch_builds import TORCH_BUILDS
from gpudash.checks.finding import Severity
from gpudash.checks.stack import choose_torch, torch_runs_here
from tests.support import FIXTURES
from tests.support.hosts import PUBLIC, C, host

H200 = FIXTURES / "h200-1x"
V100 = {"query": PUBLIC / "query-v100-name-cc.txt", "smi": H200 / "smi.txt"}
B200 = {"query": C / "query-b200-8x-varied-from-h200.txt"}
VENVS = (C / "venvs-h200-1x-derived.txt").read_text()
FI_CU126 = (C / "venvs-h200-1x-varied-flashinfer-cu126.txt").read_text()

WITH_SM70 = {
    ("2.8", "cu128"),
    ("2.8", "cu129"),
    ("2.9", "cu128"),
    ("2.10", "cu128"),
} | {(b.release, b.variant) for b in TORCH_BUILDS if b.variant in ("cu118", "cu121", "cu124")}
WITH_SM70 |= {(b.release, b.variant) for b in TORCH_BUILDS if b.variant == "cu126"}


@pytest.mark.parametrize("build", TORCH_BUILDS, ids=lambda b: f"{b.release}+{b.variant}")
def test_a_v100_runs_exactly_the_builds_that_carry_sm_70(build):
    v = torch_runs_here(build, "580.65.06", ["7.0"])
    if (build.release, build.variant) in WITH_SM70:
        assert (v.severity, v.gpus[0].how) == ("ok", "sass"), v
    else:
        assert (v.severity, v.gpus[0].how) == ("fail", "none"), v
        assert "has no sm_70 kernels" in v.reason


def test_every_cuda_12_8_or_newer_build_without_sm_70_fails_on_a_v100():
    for b in TORCH_BUILDS:
        if b.cuda >= (12, 8) and "7.0" not in b.arch_list.split(";"):
            assert not torch_runs_here(b, "595.45.04", ["7.0"]).runs, b


def test_the_torch_task_picks_a_build_with_sm_70_for_a_v100_host():
    choice = choose_torch("580.65.06", ["7.0"] * 8)
    assert choice.build is not None and (choice.build.release, choice.build.variant) in WITH_SM70


def _findings(result):
    return {f.code: f for f in run_checks(result)}


def test_torch_2_11_cu128_on_a_real_v100_capture_fails_with_the_arch_list():
    found = _findings(host(gpus=V100, env={"venvs": VENVS.replace("'13.0'", "'12.8'")}))
    f = found["wheels.torch_cannot_target_gpu"]
    assert f.severity is Severity.FAIL
    assert "has no sm_70 kernels" in f.title and "7.5;8.0;8.6;9.0;10.0;12.0" in f.title


def test_a_cuda_13_torch_not_in_the_facts_still_fails_on_a_v100():
    """A newer release than the table (2.16+cu130): its arch list is unknown, but CUDA 13
    cannot target sm_70 nor emit PTX below sm_75, so nothing in it runs on Volta."""
    venvs = VENVS.replace("torch-2.11.0.dist-info", "torch-2.16.0.dist-info")
    found = _findings(host(gpus=V100, env={"venvs": venvs}))
    assert "wheels.torch_build_unknown" not in found
    f = found["wheels.torch_cannot_target_gpu"]
    assert f.severity is Severity.FAIL and "CUDA 13 no longer targets" in f.title


def test_a_newer_torch_with_cuda_12_on_a_v100_stays_unknown_not_failed():
    venvs = VENVS.replace("torch-2.11.0.dist-info", "torch-2.16.0.dist-info")
    found = _findings(host(gpus=V100, env={"venvs": venvs.replace("'13.0'", "'12.8'")}))
    assert found["wheels.torch_build_unknown"].severity is Severity.INFO
    assert "wheels.torch_cannot_target_gpu" not in found


@pytest.mark.parametrize("version", ["0.2.14", "0.4.1", "0.5.3", "0.6.17"])
@pytest.mark.parametrize("cc", ["7.0", "6.1"])
def test_flashinfer_below_sm_75_fails_at_every_release_read(version, cc):
    for cuda in ((12, 4), (12, 8), (13, 0), None):
        v = engine_runs_here("flashinfer", version, cuda, [cc])
        assert v.severity == "fail" and "needs compute capability >= 7.5" in v.reason


def test_flashinfer_on_a_real_v100_capture_is_a_fail_finding():
    found = _findings(host(gpus=V100, env={"venvs": FI_CU126}))
    f = found["wheels.flashinfer_cannot_target_gpu"]
    assert f.severity is Severity.FAIL and "7.5" in f.title


def test_a_flashinfer_wheel_for_cuda_12_4_cannot_serve_sm_100():
    """v0.2.14's wheels: "7.5 8.0 8.9 9.0+PTX". The compute_90 PTX is no way onto a B200: the
    wheel has no sm_100 kernels and CUDA 12.4 cannot build them (sm_100 needs 12.8)."""
    v = engine_runs_here("flashinfer", "0.2.14", (12, 4), ["10.0"])
    assert v.severity == "fail", v
    assert "CUDA 12.4" in v.reason and "sm_100 needs CUDA >= 12.8" in v.reason
    assert engine_runs_here("flashinfer", "0.2.14", (12, 4), ["9.0"]).severity == "ok"
    assert engine_runs_here("flashinfer", "0.6.17", (12, 8), ["10.0"]).severity == "ok"


def test_a_flashinfer_cu124_wheel_on_a_b200_host_is_a_fail_finding():
    venvs = FI_CU126.replace(
        "flashinfer_jit_cache-0.5.2+cu126", "flashinfer_jit_cache-0.2.14+cu124"
    )
    found = _findings(host("dgx-h200", gpus=B200, env={"venvs": venvs}))
    f = found["wheels.flashinfer_cannot_target_gpu"]
    assert f.severity is Severity.FAIL and "sm_100" in f.title


@pytest.mark.parametrize(
    ("version", "cc", "severity"),
    [
        ("0.9.2", "7.0", "ok"),  # docs at v0.9.0: "compute capability 7.0 or higher"
        ("0.14.0", "7.0", "ok"),  # docs at v0.14.0: the same
        ("0.14.0", "6.1", "fail"),
        ("0.17.1", "7.0", "warn"),  # 0.15-0.20 not read: 7.0 or 7.5, unknown which
        ("0.21.0", "7.0", "fail"),  # docs at v0.21.0: "compute capability 7.5 or higher"
        ("0.21.0", "7.5", "ok"),
    ],
)
def test_vllm_floors_come_from_each_releases_own_docs(version, cc, severity):
    v = engine_runs_here("vllm", version, (12, 8), [cc])
    assert v.severity == severity, v
    if severity == "fail" and cc == "7.0":
        assert "vllm-project/vllm@v0.21.0" in v.reason
