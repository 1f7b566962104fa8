"""Stack truth (issue 17): which torch build runs on which driver and GPUs, from the facts.

Each scenario names a driver, the GPUs' compute capabilities and what a user must be told;
the expected answers are read off PyTorch's published matrix and NVIDIA's tables (the sources
are in gpudash/checks/facts/)."""

from __future__ import annotations

import re

import pytest

from gpudash.checks.engine_fit import engine_runs_here
from gpudash.checks.facts import FACTS_DATE
from gpudash.checks.facts.binary_compat import Target, ptx_runs, sass_runs
from gpudash.checks.facts.torch_builds import TORCH_BUILDS, find
from gpudash.checks.stack import (
    choose_torch,
    suggest_fix,
    torch_runs_here,
)
from gpudash.probe.gpu_ids import cc_from_name, cc_from_pci_id
from tests.support import FIXTURES

PUBLIC = FIXTURES / "public"
NO_FIELD = 'Field "compute_cap" is not a valid field to query.'

# (scenario, torch, variant, driver, ccs, severity, driver path, how each GPU is reached)
RUNS = [
    (
        "B300 + cu128: sm_100 SASS by binary compat",
        "2.11",
        "cu128",
        "580.65.06",
        ["10.3"],
        "ok",
        "native",
        ["sass_compat"],
    ),
    (
        "GB10 + cu128: sm_120 SASS by binary compat",
        "2.11",
        "cu128",
        "580.65.06",
        ["12.1"],
        "ok",
        "native",
        ["sass_compat"],
    ),
    (
        "V100 + 2.11 cu128: Volta dropped",
        "2.11",
        "cu128",
        "580.65.06",
        ["7.0"],
        "fail",
        "native",
        ["none"],
    ),
    (
        "V100 + 2.10 cu128: Volta still there",
        "2.10",
        "cu128",
        "580.65.06",
        ["7.0"],
        "ok",
        "native",
        ["sass"],
    ),
    (
        "P100 + 2.8 cu128: sm_60 dropped",
        "2.8",
        "cu128",
        "570.26",
        ["6.0"],
        "fail",
        "native",
        ["none"],
    ),
    ("A100 + 470 + cu118 through MVC", "2.7", "cu118", "470.82.01", ["8.0"], "ok", "mvc", ["sass"]),
    (
        "A100 + 450.80.02 + cu118 through MVC",
        "2.7",
        "cu118",
        "450.80.02",
        ["8.0"],
        "ok",
        "mvc",
        ["sass"],
    ),
    (
        "A100 + 450.66 is below the 11.x MVC floor",
        "2.7",
        "cu118",
        "450.66",
        ["8.0"],
        "fail",
        "none",
        ["sass"],
    ),
    ("535 + cu126 through MVC", "2.14", "cu126", "535.104.05", ["8.0"], "ok", "mvc", ["sass"]),
    (
        "cu130 on a 575 driver: other major, no MVC",
        "2.14",
        "cu130",
        "575.51.03",
        ["9.0"],
        "fail",
        "none",
        ["sass"],
    ),
    (
        "unknown cc 13.0 with PTX (2.8 cu129): warn, not fail",
        "2.8",
        "cu129",
        "580.65.06",
        ["13.0"],
        "warn",
        "native",
        ["ptx"],
    ),
    (
        "unknown cc 13.0 on 2.14 cu130 (its PyPI build has no PTX): unknown, not fail",
        "2.14",
        "cu130",
        "580.65.06",
        ["13.0"],
        "warn",
        "native",
        ["unknown"],
    ),
    (
        "unknown cc 14.0 on cu126 (no PTX): warn, not fail",
        "2.14",
        "cu126",
        "580.65.06",
        ["14.0"],
        "warn",
        "native",
        ["unknown"],
    ),
    (
        "a cc inside the table's range but never published (10.5): unknown, not fail",
        "2.14",
        "cu126",
        "580.65.06",
        ["10.5"],
        "warn",
        "native",
        ["unknown"],
    ),
    (
        "under MVC no PTX JIT is claimed (cc 13.0 stays unknown)",
        "2.14",
        "cu132",
        "580.65.06",
        ["13.0"],
        "warn",
        "mvc",
        ["unknown"],
    ),
    (
        "mixed V100 + T4 on 2.14 cu126",
        "2.14",
        "cu126",
        "580.65.06",
        ["7.0", "7.5"],
        "ok",
        "native",
        ["sass", "sass"],
    ),
    (
        "mixed V100 + T4 on 2.14 cu130: V100 fails",
        "2.14",
        "cu130",
        "580.65.06",
        ["7.0", "7.5"],
        "fail",
        "native",
        ["none", "sass"],
    ),
]


@pytest.mark.parametrize(
    "release,variant,driver,ccs,severity,path,hows",
    [r[1:] for r in RUNS],
    ids=[r[0] for r in RUNS],
)
def test_torch_runs_here_per_scenario(release, variant, driver, ccs, severity, path, hows):
    build = find(release, variant)
    assert build is not None
    v = torch_runs_here(build, driver, ccs)
    assert (v.severity, v.driver_path, [g.how for g in v.gpus]) == (severity, path, hows)


def test_b300_with_cu128_says_which_kernels_it_uses():
    v = torch_runs_here(find("2.11", "cu128"), "580.65.06", ["10.3"])
    assert v.gpus[0].matched == "sm_100" and v.reason == ""


def test_unknown_cc_is_said_with_the_facts_date():
    v = torch_runs_here(find("2.14", "cu126"), "580.65.06", ["14.0"])
    assert f"unknown to this gpudash (facts of {FACTS_DATE})" in v.reason


def test_v100_on_torch_211_cu128_gets_the_exact_fix():
    build = find("2.11", "cu128")
    v = torch_runs_here(build, "580.65.06", ["7.0"])
    assert v.reason == "torch 2.11+cu128 has no sm_70 kernels"
    assert suggest_fix("580.65.06", ["7.0"], build) == (
        "use torch 2.11 cu126 or torch 2.10 cu128 or torch 2.14 cu126"
    )


def test_a_driver_too_old_for_the_build_says_the_minimum():
    v = torch_runs_here(find("2.14", "cu130"), "575.51.03", ["9.0"])
    assert v.reason == "driver 575.51.03 is older than 580.65.06, the minimum for CUDA 13.0"


# (scenario, driver, ccs, pin torch, pin cuda, chosen release, variant, driver path)
CHOICES = [
    (
        "V100 on 580 gets cu126, not cu130",
        "580.65.06",
        ["7.0"],
        None,
        None,
        "2.14",
        "cu126",
        "native",
    ),
    (
        "B300 on 580 gets the newest cu130",
        "580.65.06",
        ["10.3"],
        None,
        None,
        "2.15",
        "cu130",
        "native",
    ),
    ("B300 on 595 gets cu132", "595.45.04", ["10.3"], None, None, "2.15", "cu132", "native"),
    ("A100 on 470 gets cu118 through MVC", "470.82.01", ["8.0"], None, None, "2.7", "cu118", "mvc"),
    (
        "A100 on 450.80.02 gets cu118 through MVC",
        "450.80.02",
        ["8.0"],
        None,
        None,
        "2.7",
        "cu118",
        "mvc",
    ),
    (
        "575 does not get cu129 with old torch",
        "575.51.03",
        ["9.0"],
        None,
        None,
        "2.14",
        "cu126",
        "native",
    ),
    (
        "535 gets cu126 of current torch via MVC",
        "535.104.05",
        ["8.0"],
        None,
        None,
        "2.14",
        "cu126",
        "mvc",
    ),
    (
        "550 gets cu126 of current torch via MVC",
        "550.54.14",
        ["8.0"],
        None,
        None,
        "2.14",
        "cu126",
        "mvc",
    ),
    (
        "mixed V100 + T4 picks what runs on both",
        "580.65.06",
        ["7.0", "7.5"],
        None,
        None,
        "2.14",
        "cu126",
        "native",
    ),
    ("pinned torch 2.9.* on V100", "580.65.06", ["7.0"], "2.9.*", None, "2.9", "cu128", "native"),
    ("pinned cuda cu126 on H100", "580.65.06", ["9.0"], None, "cu126", "2.14", "cu126", "native"),
    (
        "P100 on 580 gets cu126 (sm_60 only there)",
        "580.65.06",
        ["6.0"],
        None,
        None,
        "2.14",
        "cu126",
        "native",
    ),
]


@pytest.mark.parametrize(
    "driver,ccs,pin_torch,pin_cuda,release,variant,path",
    [c[1:] for c in CHOICES],
    ids=[c[0] for c in CHOICES],
)
def test_choose_torch_per_scenario(driver, ccs, pin_torch, pin_cuda, release, variant, path):
    choice = choose_torch(driver, ccs, pin_torch=pin_torch, pin_cuda=pin_cuda)
    assert choice.build is not None, choice.why
    assert (choice.build.release, choice.build.variant, choice.verdict.driver_path) == (
        release,
        variant,
        path,
    )


def test_the_why_line_names_release_variant_arch_and_driver_path():
    why = choose_torch("580.65.06", ["10.3"]).why
    assert why.startswith("torch 2.15 cu130: 10.3->sm_100 (SASS by binary compatibility)")
    assert "driver path native" in why


def test_a_pin_that_cannot_run_is_refused_with_its_true_reason():
    choice = choose_torch("580.65.06", ["7.0"], pin_torch="2.9.*", pin_cuda="cu130")
    assert choice.build is None
    assert choice.why == "pinned torch 2.9.* cu130: torch 2.9+cu130 has no sm_70 kernels"


def test_nothing_fits_gives_the_true_reason():
    choice = choose_torch("418.39", ["8.0"])
    assert choice.build is None
    assert choice.why == (
        "no torch build runs here: driver 418.39 is older than 450.80.02, the oldest driver "
        "that runs a build with kernels for these GPUs (torch 2.7 cu118); upgrade the driver "
        "to >= 450.80.02"
    )


def test_a_pin_outside_the_facts_says_so():
    choice = choose_torch("580.65.06", ["9.0"], pin_torch="1.13.*")
    assert choice.build is None and FACTS_DATE in choice.why


@pytest.mark.parametrize(
    "package,version,cuda,ccs,severity",
    [
        ("flashinfer", "0.6.17", (12, 8), ["7.0"], "fail"),
        ("flashinfer", "0.6.17", (12, 8), ["6.1"], "fail"),
        ("flashinfer", "0.6.17", (12, 8), ["7.5"], "ok"),
        ("flashinfer", "0.6.17", (13, 0), ["10.3"], "ok"),
        ("sgl-kernel", None, (12, 8), ["7.0"], "fail"),
        ("sgl-kernel", "0.3.21", (12, 8), ["7.5"], "warn"),  # builds read disagree on sm_75
        ("sgl-kernel", None, (12, 8), ["8.6"], "ok"),  # sm_80 SASS by binary compat
    ],
)
def test_engine_runs_here(package, version, cuda, ccs, severity):
    assert engine_runs_here(package, version, cuda, ccs).severity == severity


def test_sgl_kernel_on_a_t4_is_unknown_with_both_builds_named_not_a_false_fail():
    v = engine_runs_here("sgl-kernel", "0.3.21", (12, 8), ["7.5"])
    assert v.reason == (
        "whether sgl-kernel 0.3.21 runs on cc 7.5 is unknown: its floor is 7.5 or 8.0 "
        "(sgl-kernel main: 3ec6e094 built sm_75, 00390b86 starts at sm_80)"
    )


def test_flashinfer_below_sm75_is_flagged_with_the_floor():
    v = engine_runs_here("flashinfer", "0.6.17", (12, 8), ["7.0"])
    assert v.reason == "flashinfer needs compute capability >= 7.5; GPU cc 7.0 is below it"


@pytest.mark.parametrize(
    "target,cc,sass,ptx",
    [
        (Target((10, 0), "", False), (10, 3), True, False),
        (Target((10, 0), "a", False), (10, 3), False, False),  # arch-specific: exact only
        (Target((12, 0), "f", False), (12, 1), True, False),  # family-specific
        (Target((9, 0), "", False), (10, 0), False, False),  # no SASS across majors
        (Target((12, 0), "", True), (13, 0), False, True),  # PTX JITs forward
        (Target((12, 0), "", True), (10, 0), False, False),  # never backward
    ],
)
def test_binary_compatibility_rule(target, cc, sass, ptx):
    assert (sass_runs(target, cc), ptx_runs(target, cc)) == (sass, ptx)


def test_truncated_rtx_pro_6000_name_from_a_real_capture_gives_cc_12_0():
    names = re.findall(
        r"\|\s+\d+\s+(NVIDIA .+?\.\.\.)\s",
        (PUBLIC / "smi-rtxpro6000-maxq-2x-595-truncated.txt").read_text(),
    )
    assert names == ["NVIDIA RTX PRO 6000 Blac...", "NVIDIA RTX PRO 6000 Blac..."]
    assert {cc_from_name(n) for n in names} == {"12.0"}


def test_pci_device_id_from_a_real_lspci_capture_gives_cc_12_0():
    ids = re.findall(
        r"NVIDIA Corporation Device (\w{4})",
        (PUBLIC / "lspci-rtxpro6000-maxq-2bb4.txt").read_text(),
    )
    assert cc_from_pci_id(ids[0]) == "12.0"
    assert cc_from_pci_id("0x2BB410DE") == "12.0"  # nvidia-smi -q "Device Id" form
    assert cc_from_pci_id("10de:ffff") is None


def test_short_or_unknown_names_give_no_cc():
    assert cc_from_name("NVIDIA RTX ...") is None
    assert cc_from_name("NVIDIA Fictional X...") is None


def test_every_torch_row_carries_a_source_and_a_parseable_arch_list():
    for b in TORCH_BUILDS:
        assert b.source and re.fullmatch(r"(\d+\.\d(\+PTX)?;)*\d+\.\d(\+PTX)?", b.arch_list)


def test_a_truncated_rtx_pro_6000_name_still_gets_its_cc_and_the_torch_choice_is_not_cpu():
    """The real table whose name is cut to "NVIDIA RTX PRO 6000 Blac..." with the CSV query
    failing: the gpus section reads cc 12.0 by the name's unambiguous prefix."""
    from gpudash.checks import run_checks
    from gpudash.tasks.prepare import Facts, prepare
    from gpudash.tasks.spec import load_tasks
    from tests.support.hosts import host

    smi = PUBLIC / "smi-rtxpro6000-maxq-2x-595-truncated.txt"
    result = host(gpus={"query": 'Field "compute_cap" is not a valid field to query.', "smi": smi})
    gpus = result.data("gpus").gpus
    assert [(g.name, g.cc, g.cc_source) for g in gpus] == [
        ("NVIDIA RTX PRO 6000 Blac...", "12.0", "name")
    ] * 2
    assert "gpus.no_cc" not in [f.code for f in run_checks(result)]
    prepared = prepare(load_tasks()["torch"], Facts.from_result(result))
    assert "export GPUDASH_INDEX_URL=https://download.pytorch.org/whl/cu132\n" in prepared.script


def test_a_gpu_nothing_identifies_is_a_warning_and_the_torch_task_refuses_not_cpu():
    from gpudash.checks import run_checks
    from gpudash.tasks.prepare import Facts, PrepareError, prepare
    from gpudash.tasks.spec import load_tasks
    from tests.support.hosts import host

    smi = (PUBLIC / "smi-rtxpro6000-maxq-2x-595-truncated.txt").read_text()
    # Edited inline: the name nvidia-smi prints for a device its driver has no name for.
    smi = smi.replace("NVIDIA RTX PRO 6000 Blac...", "NVIDIA Graphics Device     ")
    result = host(gpus={"query": 'Field "compute_cap" is not a valid field to query.', "smi": smi})
    assert "gpus.no_cc" in [f.code for f in run_checks(result)]
    with pytest.raises(PrepareError, match="compute capability unknown for GPU 0, 1"):
        prepare(load_tasks()["torch"], Facts.from_result(result))
