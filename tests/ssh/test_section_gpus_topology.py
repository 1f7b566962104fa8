"""The gpus and topology sections over real captures (tests/fixtures/h200-1x, public/)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudash.probe.parts import Part
from gpudash.probe.sections import gpus, topology
from tests.support import FIXTURES

FIX = FIXTURES
H200 = FIX / "h200-1x"
PUBLIC = FIX / "public"


def part(name: str, path: Path | None, rc: int = 0, text: str | None = None) -> Part:
    return Part(name, rc, text if text is not None else path.read_text())  # type: ignore[union-attr]


def test_the_h200_query_and_table_give_one_hopper_gpu_with_its_driver_and_cuda():
    result = gpus.parse(
        {"query": part("query", H200 / "query_csv.txt"), "smi": part("smi", H200 / "smi.txt")}
    )
    assert result.source == "nvidia-smi"
    assert (result.driver_version, result.cuda_version) == ("580.159.04", "13.0")
    (gpu,) = result.gpus
    assert (gpu.name, gpu.cc, gpu.sm, gpu.arch, gpu.cc_source) == (
        "NVIDIA H200",
        "9.0",
        "sm_90",
        "Hopper",
        "driver",
    )
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (143771, 0)
    assert (gpu.power_w, gpu.power_limit_w, gpu.temp_c) == (78.73, 700.0, 39)
    assert (gpu.persistence, gpu.mig_mode, gpu.ecc_uncorrected, gpu.error) == (
        True,
        "Disabled",
        0,
        False,
    )
    assert gpu.uuid == "GPU-9f16c755-ed0b-7acb-3b4a-4eac310d0d7b"


def test_without_nvidia_smi_the_section_says_not_found_instead_of_failing():
    missing = Part("query", 127, "nvidia-smi: not found")
    result = gpus.parse({"query": missing, "smi": Part("smi", 127, "nvidia-smi: not found")})
    assert result.missing == "nvidia-smi: not found" and result.gpus == ()
    assert result.no_smi  # the host list says "no nvidia-smi" from this, not from the text


def test_an_nvml_failure_is_missing_gpus_but_not_a_missing_nvidia_smi():
    text = '{"error": "NVML: Driver/library version mismatch (nvidia-smi: not found)"}'
    result = gpus.parse({"nvml": Part("nvml", 0, text)})
    assert result.missing and result.gpus == ()
    assert not result.no_smi


def test_a_failed_query_falls_back_to_the_table_and_infers_cc_from_the_name():
    result = gpus.parse(
        {
            "query": Part("query", 2, 'Field "compute_cap" is not a valid field to query.'),
            "smi": part("smi", PUBLIC / "smi-a40-8x-525-err.txt"),
        }
    )
    assert len(result.gpus) == 8
    assert result.driver_version == "525.60.13" and result.cuda_version == "12.0"
    good = result.gpus[0]
    assert (good.cc, good.cc_source, good.sm) == ("8.6", "name", "sm_86")
    assert [g.index for g in result.gpus if g.error] == [4]


def test_a_query_without_an_index_column_numbers_gpus_in_order():
    result = gpus.parse({"query": part("query", PUBLIC / "query-h200-8x-pcie-csv.txt")})
    assert [g.index for g in result.gpus] == list(range(8))
    assert {g.cc for g in result.gpus} == {"9.0"}


def test_the_nvml_part_parses_to_the_same_gpu_as_the_query():
    from_smi = gpus.parse(
        {"query": part("query", H200 / "query_csv.txt"), "smi": part("smi", H200 / "smi.txt")}
    )
    g = from_smi.gpus[0]
    nvml_json = {
        "driver_version": "580.159.04",
        "cuda_version": "13.0",
        "gpus": [
            {
                **{
                    k: getattr(g, k)
                    for k in (
                        "index",
                        "name",
                        "uuid",
                        "bus_id",
                        "cc",
                        "memory_total_mib",
                        "memory_used_mib",
                        "temp_c",
                        "util_percent",
                        "power_w",
                        "power_limit_w",
                        "persistence",
                        "mig_mode",
                        "ecc_uncorrected",
                        "error",
                    )
                }
            }
        ],
        "processes": [],
    }
    from_nvml = gpus.parse({"nvml": Part("nvml", 0, json.dumps(nvml_json))})
    assert from_nvml.gpus == from_smi.gpus
    assert from_nvml.source == "nvml"


def test_remote_markup_and_escapes_in_a_gpu_name_are_kept_literal_and_neutralised():
    csv = (
        (H200 / "query_csv.txt")
        .read_text()
        .replace("NVIDIA H200,", "NVIDIA [bold red]H200\x1b]0;pwned\x07,", 1)
    )
    (gpu,) = gpus.parse({"query": Part("query", 0, csv)}).gpus
    assert gpu.name == "NVIDIA [bold red]H200"


@pytest.mark.parametrize(
    ("fixture", "summary", "brief", "nvlink_pairs", "worst"),
    [
        ("h200-1x/topo_m.txt", "single GPU: no GPU pairs", "1 GPU", 0, None),
        ("public/topo-h200-8x-nv18-12nic-tabs.txt", "all 28 pairs NV18", "NV18 · all 28", 28, None),
        (
            "public/topo-a100-8x-nv12-mlx5-label-spaces.txt",
            "all 28 pairs NV12",
            "NV12 · all 28",
            28,
            None,
        ),
        (
            "public/topo-rtx4090-8x-pcie-sys-tabs.txt",
            "PCIe only: SYS between sockets",
            "PCIe · SYS",
            0,
            "SYS",
        ),
    ],
)
def test_the_topology_summary_says_nvlink_or_pcie(fixture, summary, brief, nvlink_pairs, worst):
    result = topology.parse({"topo": Part("topo", 0, (FIX / fixture).read_text())})
    assert result.summary == summary
    assert result.brief == brief  # the same facts in a fleet cell
    assert result.nvlink_pairs == nvlink_pairs
    assert result.worst_pcie == worst


def test_the_brief_of_a_partial_nvlink_names_the_links_the_pairs_and_the_rest():
    full = topology.parse(
        {"topo": Part("topo", 0, (PUBLIC / "topo-h200-8x-nv18-12nic-tabs.txt").read_text())}
    )
    partial = dataclasses.replace(
        full, nvlink_pairs=4, min_nvlink=4, max_nvlink=6, worst_pcie="SYS"
    )
    assert partial.brief == "NV4..NV6 on 4/28 · SYS"


def test_an_empty_nvlink_listing_means_no_links_not_inactive_links():
    result = topology.parse(
        {"topo": part("topo", H200 / "topo_m.txt"), "nvlink": Part("nvlink", 0, "")}
    )
    assert result.nvlink is None and result.inactive_links == 0


def test_inactive_nvlinks_are_counted():
    text = (PUBLIC / "nvlink-v100-inactive-links.txt").read_text()
    result = topology.parse({"nvlink": Part("nvlink", 0, text)})
    assert result.inactive_links > 0


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["query", "smi", "nvml", "topo", "nvlink", "fabric"]), st.text(), max_size=4
    )
)
def test_arbitrary_parts_never_make_either_parser_raise(texts):
    parts = {k: Part(k, 0, v) for k, v in texts.items()}
    gpus.parse(parts)
    topology.parse(parts)
