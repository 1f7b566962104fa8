"""`nvidia-smi topo -p2p` matrices (issue 31, item 12): read from real captures (sources in
tests/fixtures/public/SOURCES.md and tests/fixtures/h200-1x/README.md), and `gpudash parse`
pointing at the right kind when one is given to `topo` or `nvlink`."""

from __future__ import annotations

import pytest

from gpudash.cli.main import main
from gpudash.probe.p2p import looks_like_p2p, parse_p2p
from tests.support import FIXTURES

PUBLIC = FIXTURES / "public"
H200 = FIXTURES / "h200-1x"


def test_the_rw_matrix_of_two_rtx_5090s_says_gpu_not_supported_both_ways():
    m = parse_p2p((PUBLIC / "p2p-rtx5090-2x-rw-gns-tabs.txt").read_text())
    assert m.gpus == ("GPU0", "GPU1") and m.notes == ()
    assert m.status == {"GPU0": {"GPU0": "X", "GPU1": "GNS"}, "GPU1": {"GPU0": "GNS", "GPU1": "X"}}
    assert not m.all_ok
    assert m.to_json()["blocked"] == ["GPU0->GPU1 GNS", "GPU1->GPU0 GNS"]


def test_the_same_matrix_pasted_with_spaces_reads_the_same():
    tabs = parse_p2p((PUBLIC / "p2p-rtx5090-2x-rw-gns-tabs.txt").read_text())
    spaces = parse_p2p((PUBLIC / "p2p-rtx5090-2x-rw-gns-spaces.txt").read_text())
    assert spaces == tabs


def test_five_gpus_all_ok_even_with_the_legend_cut_short():
    m = parse_p2p((PUBLIC / "p2p-rtx5060ti-5x-p-ok-tabs-partial.txt").read_text())
    assert len(m.gpus) == 5 and m.all_ok and m.notes == ()


def test_the_h200s_one_gpu_matrix_with_ansi_underline_is_read():
    m = parse_p2p((H200 / "topo_p2p_r.txt").read_text())
    assert m.gpus == ("GPU0",) and m.status == {"GPU0": {"GPU0": "X"}}
    assert not m.all_ok  # no pair to vouch for


def test_a_topo_m_matrix_is_not_taken_for_a_p2p_one():
    assert parse_p2p((H200 / "topo_m.txt").read_text()).gpus == ()
    assert not looks_like_p2p((H200 / "topo_m.txt").read_text())
    assert looks_like_p2p((H200 / "topo_p2p_r.txt").read_text())


@pytest.mark.parametrize(
    "text",
    ["", "GPU0", " GPU0\tGPU1\n GPU0\tX\tWAT\n GPU1", "GPU0 " * 5000 + "\nGPU0 " + "X " * 9000],
    ids=["empty", "label", "odd-cell", "huge"],
)
def test_odd_input_never_raises(text):
    m = parse_p2p(text)
    assert isinstance(m.to_json(), dict)


def test_parse_p2p_on_the_command_line(capsys):
    rc = main(["parse", "p2p", str(PUBLIC / "p2p-rtx5090-2x-rw-gns-tabs.txt"), "--text"])
    out, err = capsys.readouterr()
    assert (rc, err) == (0, "")
    assert out.splitlines() == [
        "2 GPUs; peer-to-peer: 2 pair(s) not OK",
        "  GPU0->GPU1 GNS",
        "  GPU1->GPU0 GNS",
    ]


@pytest.mark.parametrize("kind", ["nvlink", "topo"])
def test_a_p2p_matrix_given_as_another_kind_is_pointed_to_parse_p2p(capsys, kind):
    path = PUBLIC / "p2p-rtx5090-2x-rw-gns-tabs.txt"
    rc = main(["parse", kind, str(path)])
    out, err = capsys.readouterr()
    assert (rc, out) == (1, "")
    assert err == (
        f"gpudash: {path}: this is `nvidia-smi topo -p2p` output; "
        f"read it with `gpudash parse p2p {path}`\n"
    )
