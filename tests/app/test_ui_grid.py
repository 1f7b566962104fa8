"""The panels' grid: columns from their cells' widths, and what gives way when too narrow."""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.text import Text

from gpudash.ui.widgets.grid import Column, Grid


def lines(grid: Grid, width: int) -> list[str]:
    console = Console(width=width, color_system=None, legacy_windows=False)
    with console.capture() as out:
        console.print(grid)
    return [line.rstrip() for line in out.get().splitlines()]


def toolkit_like() -> Grid:
    grid = Grid(Column(style="bold"), Column(give="wrap"), show_header=False)
    grid.add_row("nvcc", "13.0.88  /usr/local/cuda-13.0/bin/nvcc")
    grid.add_row("driver", "580.159.04")
    return grid


def test_columns_are_as_wide_as_their_widest_cell_with_one_space_between() -> None:
    grid = Grid(Column("target"), Column("DNS"), Column("result"))
    grid.add_row("https://huggingface.co", "ok", "OK 12 ms")
    grid.add_row("https://pypi.org", "failed", "FAILED timeout")
    assert lines(grid, 100) == [
        "target                 DNS    result",
        "https://huggingface.co ok     OK 12 ms",
        "https://pypi.org       failed FAILED timeout",
    ]


def test_justify_centers_and_right_aligns_within_the_column() -> None:
    grid = Grid(Column(), Column("G0", justify="center"), Column("size", justify="right"))
    grid.add_row("G0", "X", "1 GiB")
    grid.add_row("G1", "NV18", "120 GiB")
    assert lines(grid, 100) == [
        "    G0     size",
        "G0  X     1 GiB",
        "G1 NV18 120 GiB",
    ]


def test_a_wrapping_column_folds_under_itself_when_too_narrow() -> None:
    assert lines(toolkit_like(), 30) == [
        "nvcc   13.0.88",
        "       /usr/local/cuda-13.0/bi",
        "       n/nvcc",
        "driver 580.159.04",
    ]


def test_an_ellipsis_column_is_cropped_and_the_rightmost_giving_column_goes_first() -> None:
    grid = Grid(
        Column("target", give="ellipsis", min_width=12),
        Column("DNS"),
        Column("result", give="ellipsis", min_width=8),
    )
    grid.add_row("https://hf.co/api/models", "ok", "FAILED connection refused")
    assert lines(grid, 45)[1] == "https://hf.co/api/models ok  FAILED connecti…"
    assert lines(grid, 37)[1] == "https://hf.co/api/models ok  FAILED …"  # result at its least
    assert lines(grid, 30)[1] == "https://hf.co/ap… ok  FAILED …"  # then the target gives
    assert grid.widths(10) == [12, 3, 8]  # neither below its least


def test_a_grid_that_cannot_give_keeps_its_width_and_measures_it() -> None:
    """The topology matrix: the panel scrolls it sideways instead."""
    grid = Grid(Column(), *(Column(f"G{i}", justify="center") for i in range(8)))
    for row in range(8):
        grid.add_row(f"G{row}", *("NV18" for _ in range(8)))
    narrow = Console(width=30)
    assert grid.__rich_measure__(narrow, narrow.options) == Measurement(42, 42)
    assert grid.widths(30) == [2] + [4] * 8  # nothing shrinks
    giving = toolkit_like()
    assert giving.__rich_measure__(narrow, narrow.options) == Measurement(8, 45)


def test_cells_keep_their_styles_and_the_column_style_goes_under_them() -> None:
    grid = Grid(Column(style="bold"), Column(), show_header=False)
    grid.add_row("NCCL", Text("not found", style="dim"))
    console = Console(width=40, color_system="truecolor", force_terminal=True)
    with console.capture() as out:
        console.print(grid)
    ansi = out.get()
    assert "\x1b[1mNCCL" in ansi and "\x1b[2mnot found" in ansi
