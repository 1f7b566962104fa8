"""`nvidia-smi topo -m` parsing over verbatim captures and public reports."""

from __future__ import annotations

import pytest

from gpudash.probe.topo import parse_topo
from tests.support import FIXTURES


def read(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


# file, GPUs, NICs, all_nvlink, min_nvlink, (row, column, token), (gpu, cpu affinity)
CASES = [
    ("h200-1x/topo_m.txt", 1, 0, False, None, ("GPU0", "GPU0", "X"), ("GPU0", "0-15")),
    (
        "public/topo-h200-8x-nv18-12nic-tabs.txt",
        8, 12, True, 18, ("GPU5", "NIC9", "PXB"), ("GPU4", "56-111,168-223"),
    ),
    (
        "public/topo-h100-8x-nv18-9nic-tabs-partial.txt",
        8, 9, True, 18, ("GPU0", "NIC8", "PIX"), ("GPU7", "80-159"),
    ),
    (
        "public/topo-h100-4x-nv6-4nic-spaces.txt",
        4, 4, True, 6, ("NIC3", "NIC3", "X"), ("GPU2", "7,15,23,31"),
    ),
    (
        "public/topo-a100-8x-nv12-mlx5-label-spaces.txt",
        8, 1, True, 12, ("mlx5_0", "GPU3", "PXB"), ("GPU4", "112-127"),
    ),
    (
        "public/topo-rtx4090-8x-pcie-sys-tabs.txt",
        8, 2, False, None, ("GPU6", "NIC1", "PHB"), ("GPU7", "56-111,168-223"),
    ),
    (
        "public/topo-b200-8x-nv18-16nic-fused-cell-partial.txt",
        8, 16, False, 18, ("GPU0", "NIC15", "SYS"), ("GPU0", "0-27,112-139"),
    ),
    (
        "public/topo-b200-8x-nv18-13nic-fused-header-partial.txt",
        8, 13, False, 18, ("GPU1", "NIC11", "NODE"), ("GPU3", "0-15"),
    ),
    (
        "public/topo-b200-8x-nv18-12nic-fused-cpu-affinity-partial.txt",
        8, 12, False, 18, ("GPU2", "NIC4", "PIX"), ("GPU2", "28-55,140-167"),
    ),
    ("public/topo-h200-1x-varied-crlf.txt", 1, 0, False, None, ("GPU0", "GPU0", "X"),
     ("GPU0", "0-15")),
    ("public/topo-h200-1x-varied-lost-esc.txt", 1, 0, False, None, ("GPU0", "GPU0", "X"),
     ("GPU0", "0-15")),
    ("public/topo-h200-8x-varied-indented.txt", 8, 12, True, 18, ("NIC11", "GPU7", "PXB"),
     ("GPU0", "0-55,112-167")),
    ("public/topo-h200-8x-varied-no-leading-tab.txt", 8, 12, True, 18, ("GPU0", "NIC0", "PXB"),
     ("GPU3", "0-55,112-167")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "gpus", "nics", "all_nv", "min_nv", "link", "cpu"), CASES)
def test_topo_reads_gpu_count_links_and_affinity_from_each_capture(
    name: str,
    gpus: int,
    nics: int,
    all_nv: bool,
    min_nv: int | None,
    link: tuple[str, str, str],
    cpu: tuple[str, str],
) -> None:
    topo = parse_topo(read(name))
    data = topo.to_json()
    assert len(data["gpus"]) == gpus
    assert len(data["nics"]) == nics
    assert data["all_nvlink"] is all_nv
    assert data["min_nvlink"] == min_nv
    row, column, token = link
    assert data["links"][row][column] == token
    assert data["cpu_affinity"][cpu[0]] == cpu[1]


def test_topo_reads_every_gpu_pair_as_nvlink_on_an_8x_h200() -> None:
    topo = parse_topo(read("public/topo-h200-8x-nv18-12nic-tabs.txt"))
    pairs = list(topo.pairs())
    assert len(pairs) == 28
    assert {token for *_, token in pairs} == {"NV18"}
    assert topo.notes == ()


def test_topo_maps_nic_labels_to_device_names_from_the_nic_legend() -> None:
    topo = parse_topo(read("public/topo-h200-8x-nv18-12nic-tabs.txt"))
    assert topo.nic_names["NIC0"] == "mlx5_0"
    assert topo.nic_names["NIC11"] == "mlx5_11"
    assert topo.nearest_nics("GPU0") == ("NIC0",)


def test_topo_maps_a_raw_mlx5_column_label_to_itself() -> None:
    topo = parse_topo(read("public/topo-a100-8x-nv12-mlx5-label-spaces.txt"))
    assert topo.to_json()["nic_names"] == {"mlx5_0": "mlx5_0"}
    assert topo.gpu_numa_id == {}
    assert topo.numa_affinity["GPU6"] == "5"


def test_topo_reads_the_h200_capture_despite_ansi_underline_and_doubled_tab() -> None:
    data = parse_topo(read("h200-1x/topo_m.txt")).to_json()
    assert data["gpus"] == ["GPU0"]
    assert data["links"] == {"GPU0": {"GPU0": "X"}}
    assert data["numa_affinity"] == {"GPU0": "0"}
    assert data["gpu_numa_id"] == {"GPU0": "N/A"}


def test_topo_keeps_a_numa_affinity_of_n_a_as_n_a() -> None:
    """HAMi#99's Tesla P4: `0-7\t\tN/A\t\tN/A`, a doubled tab before each N/A (issue 31:
    the NUMA affinity came out empty and the N/A landed in the wrong column)."""
    topo = parse_topo(read("public/topo-p4-1x-numa-na-tabs.txt"))
    assert topo.cpu_affinity == {"GPU0": "0-7"}
    assert topo.numa_affinity == {"GPU0": "N/A"}
    assert topo.gpu_numa_id == {"GPU0": "N/A"}


def test_topo_splits_a_fused_cell_from_a_16_nic_header() -> None:
    topo = parse_topo(read("public/topo-b200-8x-nv18-16nic-fused-cell-partial.txt"))
    row = topo.links["GPU0"]
    assert (row["NIC13"], row["NIC14"], row["NIC15"]) == ("SYS", "SYS", "SYS")
    assert topo.numa_affinity["GPU0"] == "0"
    assert topo.gpu_numa_id["GPU0"] == "N/A"


def test_topo_splits_fused_header_labels() -> None:
    glued = parse_topo(read("public/topo-b200-8x-nv18-13nic-fused-header-partial.txt"))
    assert glued.nics[-2:] == ("NIC11", "NIC12")
    assert glued.links["GPU0"]["NIC11"] == "PIX"
    assert glued.links["GPU0"]["NIC12"] == "NODE"
    cpu = parse_topo(read("public/topo-b200-8x-nv18-12nic-fused-cpu-affinity-partial.txt"))
    assert cpu.nics[-1] == "NIC11"
    assert cpu.cpu_affinity["GPU0"] == "0-27,112-139"


def test_topo_does_not_vouch_for_all_nvlink_when_rows_are_missing() -> None:
    topo = parse_topo(read("public/topo-a100-8x-nv12-12nic-spaces-partial.txt"))
    assert topo.all_nvlink is False
    assert topo.min_nvlink == 12
    assert any("no row for GPU4" in n for n in topo.notes)


def test_topo_empty_or_foreign_text_gives_an_empty_matrix_with_a_note() -> None:
    for text in ("", "nvidia-smi: not found", "Legend:\n  X = Self"):
        topo = parse_topo(text)
        assert topo.gpus == ()
        assert topo.to_json()["all_nvlink"] is False
        assert topo.notes


def test_topo_to_json_has_exactly_the_public_keys() -> None:
    keys = set(parse_topo(read("h200-1x/topo_m.txt")).to_json())
    assert keys == {
        "gpus", "nics", "nic_names", "links", "cpu_affinity", "numa_affinity",
        "gpu_numa_id", "all_nvlink", "min_nvlink",
    }  # fmt: skip
