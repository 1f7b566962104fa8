"""A host printing an absurdly wide `nvidia-smi topo -m` (9000 GPU columns) must not cost the
app a matrix of 81M cells drawn on the event loop: the panel draws at most MAX_DRAWN GPUs and
says how many more the host reported (bench/bench_hostile_keys.py `--attack topo`)."""

from __future__ import annotations

from gpudash.probe.topo import parse_topo
from gpudash.ui.panels.topology import MAX_DRAWN, affinity_lines, matrix_table


def wide_topo(n: int) -> str:
    names = [f"GPU{i}" for i in range(n)]
    rows = ["\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity"]
    for i, name in enumerate(names):
        cells = ["X" if j == i else "NV18" for j in range(n)]
        rows.append(name + "\t" + "\t".join(cells) + "\t0-55\t0")
    return "\n".join(rows) + "\n"


def test_a_header_far_wider_than_any_board_draws_a_bounded_matrix() -> None:
    matrix = parse_topo(wide_topo(300))
    assert len(matrix.gpus) == 300  # the parser keeps what the host said
    table = matrix_table(matrix, all_nics=True)
    assert len(table.columns) == 1 + MAX_DRAWN  # the label column and MAX_DRAWN GPUs
    assert len(table.rows) == MAX_DRAWN
    assert len(affinity_lines(matrix)) <= MAX_DRAWN


def test_a_real_8_gpu_board_is_drawn_whole() -> None:
    matrix = parse_topo(wide_topo(8))
    table = matrix_table(matrix, all_nics=True)
    assert len(table.columns) == 1 + 8 and len(table.rows) == 8
