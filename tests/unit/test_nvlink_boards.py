"""NVLink completeness per board topology (issue 31, item 11).

The DGX-1 matrix and two 4-GPU AC922 matrices are real captures (tests/fixtures/public/SOURCES.md,
tests/fixtures/public/topo-v100-4x-ac922.SOURCES.md); the 6-GPU AC922 matrix and the 4-GPU one
used for the edits are written from IBM's Redpaper (tests/fixtures/written/README.md). The V100
hosts' GPU lists are the real H200 8-GPU query with every name and cc changed to the real
`Tesla V100-SXM2-16GB, 7.0` row (query-v100-name-cc.txt), done here in the test."""

from __future__ import annotations

from gpudash.checks import run_checks
from gpudash.checks.finding import Severity
from gpudash.probe.topo import parse_topo
from tests.support import FIXTURES
from tests.support.hosts import C, host

DGX1 = (FIXTURES / "public" / "topo-v100-8x-dgx1-hybrid-cube-mesh-spaces.txt").read_text()
AC922_4 = (FIXTURES / "written" / "topo-v100-4x-ac922-8335-gtg.txt").read_text()
AC922_6 = (FIXTURES / "written" / "topo-v100-6x-ac922-8335-gtw.txt").read_text()
# Real AC922 captures: host ac922-02 (milanpro/Masterthesis-Heterogeneous-PC@5cf4beb6) and a
# node of Princeton's Traverse cluster (jdh4/della-gpu-A100@c708d127), both tab separated.
AC922_REAL = (FIXTURES / "public" / "topo-v100-4x-ac922-nv3-pairs-6mlx5-tabs.txt").read_text()
TRAVERSE = (
    FIXTURES / "public" / "topo-v100-4x-traverse-ac922-nv3-pairs-4mlx5-tabs.txt"
).read_text()
H200_8 = (FIXTURES / "saved" / "sources" / "query-h200-8x-derived.txt").read_text()


def _v100_query(count: int) -> str:
    lines = H200_8.replace("NVIDIA H200", "Tesla V100-SXM2-16GB").replace(", 9.0,", ", 7.0,")
    head, *rows = lines.splitlines()
    return "\n".join([head, *rows[:count]]) + "\n"


def _nvlink(topo: str, count: int) -> dict[str, object]:
    result = host(
        "dgx-h200",
        gpus={"query": _v100_query(count)},
        topology={"topo": topo, "nvlink": "", "fabric": ""},
    )
    return {f.code: f for f in run_checks(result) if f.code.startswith("nvlink.")}


def _swap(text: str, row: str, col_index: int, new: str) -> str:
    """`text` with the cell in column `col_index` of row `row` replaced (space aligned)."""
    head, *lines = text.splitlines()
    out = [head]
    for line in lines:
        cells = line.split()
        if cells and cells[0] == row:
            cells[1 + col_index] = new
            line = "  ".join(cells)
        out.append(line)
    return "\n".join(out) + "\n"


def test_a_healthy_dgx1_hybrid_cube_mesh_is_ok_with_pairs_on_pcie():
    found = _nvlink(DGX1, 8)
    assert set(found) == {"nvlink.ok"}, found
    assert "DGX-1 hybrid cube-mesh" in found["nvlink.ok"].title


def test_a_dgx1_with_a_lost_nvlink_peer_fails_naming_the_gpus():
    broken = _swap(_swap(DGX1, "GPU0", 3, "SYS"), "GPU3", 0, "SYS")  # GPU0-GPU3 NV2 lost
    found = _nvlink(broken, 8)
    f = found["nvlink.missing_pairs"]
    assert f.severity is Severity.FAIL
    assert f.title.startswith("GPU0, GPU3 reach fewer NVLink peers than a DGX-1")
    assert f.facts["per_gpu"]["GPU0"] == "3 peers, 4 links"


def test_a_dgx1_pair_down_from_nv2_to_nv1_is_a_warning():
    thinner = _swap(_swap(DGX1, "GPU0", 3, "NV1"), "GPU3", 0, "NV1")
    found = _nvlink(thinner, 8)
    assert set(found) == {"nvlink.fewer_links"}
    assert found["nvlink.fewer_links"].severity is Severity.WARN
    assert "(6)" in found["nvlink.fewer_links"].title


def test_ac922_pairs_and_triples_are_healthy():
    four, six = _nvlink(AC922_4, 4), _nvlink(AC922_6, 6)
    assert set(four) == {"nvlink.ok"} and "AC922 8335-GTG" in four["nvlink.ok"].title
    assert set(six) == {"nvlink.ok"} and "AC922 8335-GTW" in six["nvlink.ok"].title


def test_an_ac922_whose_gpu_pair_lost_nvlink_fails():
    found = _nvlink(_swap(_swap(AC922_4, "GPU2", 3, "SYS"), "GPU3", 2, "SYS"), 4)
    assert found["nvlink.missing_pairs"].severity is Severity.FAIL
    assert "GPU2, GPU3" in found["nvlink.missing_pairs"].title


def test_an_sxm2_host_of_no_known_board_is_not_judged_never_failed():
    two = (
        "        GPU0    GPU1    CPU Affinity\n"
        "GPU0     X      SYS     0-7\n"
        "GPU1    SYS      X      0-7\n"
    )
    found = _nvlink(two, 2)
    assert set(found) == {"nvlink.board_unknown"}
    assert found["nvlink.board_unknown"].severity is Severity.INFO
    assert "not judged" in found["nvlink.board_unknown"].title


def test_nvswitch_boards_are_still_judged_all_pairs():
    pcie_pair = (C / "topo-h200-8x-varied-pcie-pair.txt").read_text()
    found = {
        f.code: f
        for f in run_checks(host("dgx-h200", topology={"topo": pcie_pair}))
        if f.code.startswith("nvlink.")
    }
    assert found["nvlink.missing_pairs"].severity is Severity.FAIL


def test_real_ac922_captures_are_read_as_pairs_per_socket_and_are_healthy():
    for text, nics in ((AC922_REAL, 6), (TRAVERSE, 4)):
        topo = parse_topo(text)
        assert topo.gpus == ("GPU0", "GPU1", "GPU2", "GPU3") and len(topo.nics) == nics
        assert topo.links["GPU0"]["GPU1"] == topo.links["GPU2"]["GPU3"] == "NV3"
        assert {topo.links["GPU0"][g] for g in ("GPU2", "GPU3")} == {"SYS"}
        assert topo.numa_affinity == {"GPU0": "0", "GPU1": "0", "GPU2": "8", "GPU3": "8"}
        found = _nvlink(text, 4)
        assert set(found) == {"nvlink.ok"}, found
        assert "AC922 8335-GTG" in found["nvlink.ok"].title


def test_the_real_ac922_capture_with_its_pair_on_smp_fails():
    broken = _swap(_swap(AC922_REAL, "GPU0", 1, "SYS"), "GPU1", 0, "SYS")
    found = _nvlink(broken, 4)
    assert found["nvlink.missing_pairs"].severity is Severity.FAIL
    assert "GPU0, GPU1" in found["nvlink.missing_pairs"].title
