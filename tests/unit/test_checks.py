"""Every built-in check, shown firing on a capture that has the problem and quiet on one that
has not. Hosts are built by the real section parsers from real captures and their varied copies
(tests/fixtures/checks/README.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpudash.checks import run_checks
from gpudash.checks.cuda import can_run, can_target, driver_cuda
from gpudash.checks.finding import Finding, Severity, counts, problems, worst_severity
from gpudash.config.load import parse_config
from gpudash.model import FindingsComputed, HostResult
from gpudash.versions import Spec, parse_version
from tests.support import FIXTURES
from tests.support.hosts import PUBLIC, C, df, failed, host, model_dir, target

OLD_DRIVER = {
    "query": C / "query-h200-1x-varied-old-driver.txt",
    "smi": C / "smi-h200-1x-varied-old-driver.txt",
}
NVCC_131 = "/usr/local/cuda/bin/nvcc\t/usr/local/cuda-13.1/bin/nvcc\n" + (
    FIXTURES / "h200-1x" / "nvcc.txt"
).read_text().replace("release 13.0, V13.0.88", "release 13.1, V13.1.80")
VENVS = (C / "venvs-h200-1x-derived.txt").read_text()
B200 = {"query": C / "query-b200-8x-varied-from-h200.txt"}


def codes(result: HostResult, config: str | None = None) -> list[str]:
    host_config = parse_config(config, "t.toml").hosts[0] if config else None
    return [f.code for f in run_checks(result, host_config)]


GATED = """
[hosts.h200-1x.expect]
models = [
  { repo = "moonshotai/Kimi-K2-Instruct", gated = true, size_gb = 600, dir = "/root/models" },
]
"""

# (code, host where it fires, host where it does not, config for both or None)
CASES: list[tuple[str, Callable[[], HostResult], Callable[[], HostResult], str | None]] = [
    ("host.unreachable", lambda: failed("h200-1x"), lambda: host(), None),
    ("probe.section_missing", lambda: host(network=None), lambda: host(), None),
    ("driver.too_old_for_nvcc", lambda: host(gpus=OLD_DRIVER), lambda: host(), None),
    ("driver.nvcc_minor_compat", lambda: host(toolkit={"nvcc.1": NVCC_131}), lambda: host(), None),
    ("wheels.no_torch", lambda: host(env={"venvs": ""}), lambda: host(), None),
    (
        "wheels.torch_cpu_build",
        lambda: host(env={"venvs": C / "venvs-h200-1x-varied-cpu-torch.txt"}),
        lambda: host(),
        None,
    ),
    ("wheels.torch_cuda_too_new", lambda: host(gpus=OLD_DRIVER), lambda: host(), None),
    (
        "wheels.torch_minor_compat",
        lambda: host(gpus=OLD_DRIVER, env={"venvs": VENVS.replace("'13.0'", "'12.9'")}),
        lambda: host(gpus=OLD_DRIVER, env={"venvs": VENVS.replace("'13.0'", "'12.8'")}),
        None,
    ),
    (
        "wheels.torch_cannot_target_gpu",
        lambda: host("dgx-h200", gpus=B200, env={"venvs": C / "venvs-h200-1x-varied-cu126.txt"}),
        lambda: host("dgx-h200", gpus=B200),
        None,
    ),
    (
        "wheels.flashinfer_cannot_target_gpu",
        lambda: host(
            "dgx-h200", gpus=B200, env={"venvs": C / "venvs-h200-1x-varied-flashinfer-cu126.txt"}
        ),
        lambda: host(env={"venvs": C / "venvs-h200-1x-varied-flashinfer-cu126.txt"}),
        None,
    ),
    (
        "nvlink.missing_pairs",
        lambda: host("dgx-h200", topology={"topo": C / "topo-h200-8x-varied-pcie-pair.txt"}),
        lambda: host("dgx-h200"),
        None,
    ),
    (
        "nvlink.missing_pairs",  # PCIe-only A40s are not meant to be NVLinked
        lambda: host("dgx-h200", topology={"topo": C / "topo-h200-8x-varied-pcie-pair.txt"}),
        lambda: host("pcie-a40"),
        None,
    ),
    (
        "nvlink.fewer_links",
        lambda: host("dgx-h200", topology={"topo": C / "topo-h200-8x-varied-nv17.txt"}),
        lambda: host("dgx-h200"),
        None,
    ),
    (
        "nvlink.inactive_links",
        lambda: host("dgx-h200", topology={"nvlink": PUBLIC / "nvlink-v100-inactive-links.txt"}),
        lambda: host("dgx-h200", topology={"nvlink": PUBLIC / "nvlink-gb200-18links-elided.txt"}),
        None,
    ),
    (
        "nvlink.fabric_not_ready",
        lambda: host("dgx-h200", topology={"fabric": C / "fabric-h200-8x-varied-in-progress.txt"}),
        lambda: host("dgx-h200"),
        None,
    ),
    (
        "gpus.none",
        lambda: host(gpus={"query": "nvidia-smi: not found", "smi": "nvidia-smi: not found"}),
        lambda: host(),
        None,
    ),
    ("gpus.err", lambda: host("pcie-a40"), lambda: host(), None),
    (
        "gpus.ecc_uncorrected",
        lambda: host(gpus={"query": C / "query-h200-1x-varied-ecc.txt"}),
        lambda: host(),
        None,
    ),
    (
        "gpus.persistence_off",
        lambda: host(gpus={"query": C / "query-h200-1x-varied-persistence-off.txt"}),
        lambda: host(),
        None,
    ),
    ("gpus.mig_enabled", lambda: host("a100-mig"), lambda: host(), None),
    (
        "gpus.memory_in_use",
        lambda: host(gpus={"query": C / "query-h200-1x-varied-memory-used.txt"}),
        lambda: host(),
        None,
    ),
    (
        "gpus.mixed_models",
        lambda: host("dgx-h200", gpus={"query": C / "query-h200-8x-varied-mixed.txt"}),
        lambda: host("dgx-h200"),
        None,
    ),
    (
        "disk.incomplete_model",
        lambda: host(models={"dir.1": model_dir("/root/models", ("Kimi-K2-Instruct", 61, 3))}),
        lambda: host(models={"dir.1": model_dir("/root/models", ("Kimi-K2-Instruct", 61, 0))}),
        None,
    ),
    (
        "disk.model_does_not_fit",
        lambda: host(models={"df": df("/root/models", 100), "dir.1": model_dir("/root/models")}),
        lambda: host(models={"df": df("/root/models", 900), "dir.1": model_dir("/root/models")}),
        GATED,
    ),
    (
        "network.unreachable",
        lambda: host(),
        lambda: host(network={"target.1": target("https://huggingface.co")}),
        None,
    ),
    (
        "network.no_hf_token_for_gated",
        lambda: host(),
        lambda: host(network={"token": "env HF_TOKEN"}),
        GATED,
    ),
    (
        "network.no_hf_token_for_gated",  # a gated model already on disk needs no token
        lambda: host(),
        lambda: host(models={"dir.1": model_dir("/root/models", ("Kimi-K2-Instruct", 61, 0))}),
        GATED,
    ),
    ("network.hf_offline", lambda: host(network={"flags": "HF_HUB_OFFLINE=1"}), host, None),
    ("env.no_uv", lambda: host(env={"tools": "tool\tuv\t"}), lambda: host(), None),
    ("env.no_venv", lambda: host(env={"venvs": ""}), lambda: host(), None),
    (
        "env.python_too_old",
        lambda: host(env={"venvs": C / "venvs-h200-1x-varied-py38.txt"}),
        lambda: host(),
        None,
    ),
    (
        "env.no_serving_engine",
        lambda: host(),
        lambda: host(env={"venvs": VENVS + "\ndist\tsglang-0.5.5.dist-info"}),
        None,
    ),
]


@pytest.mark.parametrize(
    ("code", "fires", "quiet", "config"),
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_each_check_fires_on_the_capture_with_the_problem_and_not_on_the_one_without(
    code: str,
    fires: Callable[[], HostResult],
    quiet: Callable[[], HostResult],
    config: str | None,
) -> None:
    assert code in codes(fires(), config)
    assert code not in codes(quiet(), config)


def test_the_real_h200_passes_every_hardware_check_and_only_misses_network_and_an_engine():
    findings = run_checks(host())
    assert {f.code for f in problems(findings)} == {"network.unreachable"}
    assert {f.code for f in findings if f.severity is Severity.OK} >= {
        "gpus.ok",
        "driver.ok",
        "wheels.ok",
    }
    assert "env.no_serving_engine" in [f.code for f in findings]


def test_the_8x_h200_nvlink_board_is_ok_with_all_28_pairs_nv18():
    (ok,) = [f for f in run_checks(host("dgx-h200")) if f.family == "nvlink"]
    assert (ok.code, ok.title) == ("nvlink.ok", "NVLink: all 28 pairs NV18")


def test_an_old_driver_fails_nvcc_and_torch_and_says_which_driver_is_needed():
    findings = {f.code: f for f in run_checks(host(gpus=OLD_DRIVER))}
    nvcc = findings["driver.too_old_for_nvcc"]
    assert nvcc.severity is Severity.FAIL
    assert nvcc.title == (
        "nvcc 13.0 needs driver >= 580.65.06; driver 570.124.06 supports CUDA 12.8"
    )
    assert nvcc.facts["paths"] == ["/usr/local/cuda/bin/nvcc"]
    torch = findings["wheels.torch_cuda_too_new"]
    assert (torch.fix_task, torch.fix_key) == ("torch", "t")
    assert "cu128" in torch.fix


def test_an_nv17_pair_is_named_with_the_usual_link_count():
    topo = {"topo": C / "topo-h200-8x-varied-nv17.txt"}
    (f,) = [f for f in run_checks(host("dgx-h200", topology=topo)) if f.family == "nvlink"]
    assert f.severity is Severity.WARN
    assert f.facts == {"pairs": ["GPU0-GPU1 NV17"], "usual": "NV18"}


def test_a_pcie_pair_on_an_hgx_board_fails_naming_the_pair():
    topo = {"topo": C / "topo-h200-8x-varied-pcie-pair.txt"}
    found = [f for f in run_checks(host("dgx-h200", topology=topo)) if f.family == "nvlink"]
    assert [f.code for f in found] == ["nvlink.missing_pairs"]
    assert found[0].facts["pairs"] == ["GPU2-GPU5 SYS"]
    assert found[0].title == "1 of 28 GPU pairs are not on NVLink on a NVIDIA H200 board"


def test_an_ecc_error_is_a_fail_with_the_count_per_gpu():
    (f,) = [
        f
        for f in run_checks(host(gpus={"query": C / "query-h200-1x-varied-ecc.txt"}))
        if f.code == "gpus.ecc_uncorrected"
    ]
    assert (f.severity, f.title, dict(f.facts)) == (
        Severity.FAIL,
        "uncorrected ECC errors on GPU 0 (2)",
        {"GPU 0": 2},
    )


def test_the_a40_err_gpu_and_its_busy_neighbour_are_both_named():
    found = {f.code: f for f in run_checks(host("pcie-a40"))}
    assert found["gpus.err"].facts == {"gpus": [4]}
    busy = found["gpus.memory_in_use"].facts
    assert busy["used_mib"] == {"GPU 2": 821}
    assert busy["processes"] == ["GPU 2 pid 2111354 ...eratornet/venv/bin/python 818 MiB"]


def test_findings_come_worst_first_with_keys_from_the_task_table():
    findings = run_checks(host("pcie-a40"))
    ranks = [f.severity.rank for f in findings]
    assert ranks == sorted(ranks, reverse=True)
    config = parse_config('[hosts.h]\n[tasks.torch]\nkey = "T"\n', "t.toml")
    keyed = run_checks(host("pcie-a40"), config.hosts[0], tasks=config.tasks)
    assert {f.fix_key for f in keyed if f.fix_task == "torch"} == {"T"}


def test_worst_severity_and_counts_summarise_a_host_for_a_list_row():
    findings = run_checks(host("pcie-a40"))
    assert worst_severity(findings) is Severity.FAIL
    assert worst_severity(()) is None
    n = counts(findings)
    assert set(n) == set(Severity) and n[Severity.FAIL] == 3
    event = FindingsComputed("pcie-a40", findings)
    assert event.findings[0].to_json()["severity"] == "fail"


def test_a_finding_serialises_to_plain_json():
    f = Finding(Severity.WARN, "x.y", "t", facts={"a": (1, 2)}, fix_task="uv", fix_key="u")
    assert f.to_json() == {
        "severity": "warn",
        "code": "x.y",
        "title": "t",
        "why": "",
        "fix": "",
        "facts": {"a": [1, 2]},
        "fix_task": "uv",
        "fix_key": "u",
        "fix_params": {},
    }


@pytest.mark.parametrize(
    ("cuda", "driver", "native", "verdict"),
    [
        ("13.0", "580.65.06", "13.0", "native"),
        ("13.1", "580.159.04", "13.0", "minor"),
        ("13.0", "575.51.03", "12.9", "no"),
        ("12.9", "525.60.13", "12.0", "minor"),
        ("12.4", "520.61.05", "11.8", "no"),
        ("11.8", "450.80.02", "11.0", "minor"),
        ("12.8", "580.159.04", "13.0", "native"),
    ],
)
def test_minor_version_compatibility_follows_nvidias_table(cuda, driver, native, verdict):
    assert can_run(parse_version(cuda), parse_version(driver), parse_version(native)) == verdict


@pytest.mark.parametrize(
    ("cuda", "cc", "ok"),
    [
        ("12.6", "10.0", False),
        ("12.8", "10.0", True),
        ("12.8", "10.3", False),
        ("12.9", "10.3", True),
        ("12.8", "12.0", True),
        ("12.8", "11.0", False),
        ("13.0", "11.0", True),
        ("11.7", "9.0", False),
        ("11.8", "9.0", True),
        ("13.0", "7.0", False),
        ("12.9", "7.0", True),
    ],
)
def test_a_cuda_release_targets_only_the_architectures_it_knows(cuda, cc, ok):
    major, minor = (int(p) for p in cc.split("."))
    assert can_target(parse_version(cuda), (major, minor))[0] is ok


def test_without_a_cuda_version_from_nvidia_smi_the_driver_table_gives_it():
    assert driver_cuda("570.124.06", None) == ((12, 8), "driver table")
    assert driver_cuda("570.124.06", "12.8") == ((12, 8), "nvidia-smi")
    assert driver_cuda(None, None) == (None, "unknown")


@pytest.mark.parametrize(
    ("spec", "version", "ok"),
    [
        (">=580", "580.65.06", True),
        (">=580", "575.51.03", False),
        ("13.0", "13.0.88", True),
        ("13.0", "13.1", False),
        ("2.11.*", "2.11.0+cu130", True),
        (">=12.8,<13", "12.9", True),
        (">=12.8,<13", "13.0", False),
        ("!=3.8", "3.12.3", True),
    ],
)
def test_version_specs_compare_padded_numbers_and_prefixes(spec, version, ok):
    parsed = Spec.parse(spec)
    assert parsed is not None and parsed.matches(version) is ok


def test_an_unreachable_hosts_finding_does_not_name_the_host_twice():
    """The transport's error starts with the host's name; the finding is listed under it."""
    (finding,) = run_checks(failed("h1", "h1: connection refused by 10.0.0.1:22"))
    assert finding.title == "host did not answer: connection refused by 10.0.0.1:22"
    (other,) = run_checks(failed("h1", "h10: jump host down"))  # another host's name stays
    assert other.title == "host did not answer: h10: jump host down"
