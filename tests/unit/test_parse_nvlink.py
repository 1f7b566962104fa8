"""`nvidia-smi nvlink -s` over the H200 capture and public reports."""

from __future__ import annotations

from gpudash.probe.nvlink import parse_nvlink
from tests.support import FIXTURES


def read(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


def test_nvlink_empty_output_of_the_h200_vm_means_no_gpus() -> None:
    status = parse_nvlink(read("h200-1x/nvlink_s.txt"))
    assert status.to_json() == {"gpus": []}
    assert status.notes == ()


def test_nvlink_reads_18_active_links_at_53_gbps_on_gb200() -> None:
    data = parse_nvlink(read("public/nvlink-gb200-18links-elided.txt")).to_json()
    first = data["gpus"][0]
    assert (first["index"], first["name"]) == (0, "NVIDIA GB200")
    assert first["uuid"] == "GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde"
    assert len(first["links"]) == 18
    assert first["links"][17] == {"link": 17, "speed_gbps": 53.125, "active": True}
    assert len(data["gpus"][1]["links"]) == 2  # the reporter elided the rest with "..."


def test_nvlink_reads_inactive_links_as_inactive_without_speed() -> None:
    (gpu,) = parse_nvlink(read("public/nvlink-v100-inactive-links.txt")).gpus
    assert (gpu.index, gpu.name) == (3, "Tesla V100-SXM2-32GB")
    assert gpu.active_links == 4
    assert gpu.links[3].to_json() == {"link": 3, "speed_gbps": None, "active": False}
    assert gpu.links[0].speed_gbps == 25.781


def test_nvlink_notes_the_all_links_inactive_message() -> None:
    text = (
        "GPU 0: NVIDIA B200 (UUID: GPU-0)\n"
        "NVML: Unable to retrieve NVLink information as all links are inActive\n"
    )
    status = parse_nvlink(text)
    assert status.gpus[0].all_inactive is True
    assert status.gpus[0].links == ()
    assert "all links are inActive" in status.notes[0]
