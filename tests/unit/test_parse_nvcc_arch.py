"""`nvcc --version` and the compute-capability tables."""

from __future__ import annotations

import pytest

from gpudash.probe.arch import Arch, arch_for_cc, cc_from_name
from gpudash.probe.nvcc import parse_nvcc
from tests.support import FIXTURES


def test_nvcc_reads_release_version_and_build_from_the_h200_capture() -> None:
    text = (FIXTURES / "h200-1x/nvcc.txt").read_text()
    assert parse_nvcc(text).to_json() == {
        "release": "13.0",
        "version": "13.0.88",
        "build": "cuda_13.0.r13.0/compiler.36424714_0",
    }


@pytest.mark.parametrize("text", ["", "sh: 1: nvcc: not found", "bash: nvcc: command not found"])
def test_nvcc_missing_or_empty_gives_all_null_and_a_note(text: str) -> None:
    version = parse_nvcc(text)
    assert version.to_json() == {"release": None, "version": None, "build": None}
    assert version.notes


def test_nvcc_text_that_is_not_nvcc_output_gives_all_null() -> None:
    assert parse_nvcc("Python 3.11.9").to_json()["release"] is None


@pytest.mark.parametrize(
    ("cc", "name", "sm"),
    [
        ("7.0", "Volta", "sm_70"),
        ("7.2", "Volta (Xavier)", "sm_72"),
        ("7.5", "Turing", "sm_75"),
        ("8.0", "Ampere", "sm_80"),
        ("8.6", "Ampere", "sm_86"),
        ("8.7", "Ampere (Orin)", "sm_87"),
        ("8.9", "Ada", "sm_89"),
        ("9.0", "Hopper", "sm_90"),
        ("10.0", "Blackwell", "sm_100"),
        ("10.3", "Blackwell Ultra", "sm_103"),
        ("11.0", "Blackwell (Thor)", "sm_110"),
        ("12.0", "Blackwell RTX/PRO", "sm_120"),
        ("12.1", "Blackwell (GB10)", "sm_121"),
        ("15.2", "unknown", "sm_152"),
    ],
)
def test_arch_for_cc_names_the_architecture_and_sm_target(cc: str, name: str, sm: str) -> None:
    assert arch_for_cc(cc) == Arch(name, sm)


@pytest.mark.parametrize("cc", [None, "", "N/A", "[N/A]", "nine"])
def test_arch_for_cc_is_none_for_missing_values(cc: str | None) -> None:
    assert arch_for_cc(cc) is None


@pytest.mark.parametrize(
    ("gpu_name", "cc"),
    [
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA H100 80GB HBM...", "9.0"),
        ("NVIDIA H200", "9.0"),
        ("NVIDIA GH200 480GB", "9.0"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA GB200", "10.0"),
        ("NVIDIA B300 SXM6 AC", "10.3"),
        ("NVIDIA GB300", "10.3"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA A100 80GB PCIe", "8.0"),
        ("NVIDIA A800 80GB PCIe", "8.0"),
        ("NVIDIA A30", "8.0"),
        ("NVIDIA A10", "8.6"),
        ("NVIDIA A40", "8.6"),
        ("NVIDIA RTX A6000", "8.6"),
        ("NVIDIA GeForce RTX 3090", "8.6"),
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
        ("NVIDIA RTX 6000 Ada Generation", "8.9"),
        ("Tesla V100-SXM2-32GB", "7.0"),
        ("Tesla T4", "7.5"),
        ("Tesla P100-PCIE...", "6.0"),
        ("NVIDIA GeForce GTX 1650", "7.5"),
        ("Some Other Card", None),
    ],
)
def test_cc_from_name_infers_compute_capability_from_marketing_names(
    gpu_name: str, cc: str | None
) -> None:
    assert cc_from_name(gpu_name) == cc
