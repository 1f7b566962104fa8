"""The Env panel's pythons: a line per version, so a pyenv shims directory reads as three
lines, not a dozen comma-joined paths."""

from __future__ import annotations

from rich.console import Console

from gpudash.probe.sections.env import Python
from gpudash.ui.panels.env import pythons_grid

SHIMS = "/root/.pyenv/shims"


def lines(renderable: object, width: int) -> list[str]:
    console = Console(width=width, color_system=None, legacy_windows=False)
    with console.capture() as out:
        console.print(renderable)
    return [line.rstrip() for line in out.get().splitlines()]


def py(path: str, version: str | None) -> Python:
    return Python(path=path, realpath=path, version=version)


def test_pythons_are_grouped_by_version_in_path_order_with_unknown_last() -> None:
    pythons = (
        py(f"{SHIMS}/python3", "3.11.7"),
        py(f"{SHIMS}/python3.10", None),
        py(f"{SHIMS}/python3.11", "3.11.7"),
        py("/usr/bin/python3", "3.11.2"),
        py(f"{SHIMS}/python3.12", None),
        py(f"{SHIMS}/python", "3.11.7"),
    )
    assert lines(pythons_grid(pythons), 100) == [
        f"python 3.11.7 {SHIMS}/python3, python3.11, python",
        "       3.11.2 /usr/bin/python3",
        f"       ?      {SHIMS}/python3.10, python3.12",
    ]


def test_long_path_lists_wrap_under_themselves_and_remote_text_stays_text() -> None:
    pythons = tuple(py(f"{SHIMS}/python3.{n}", None) for n in range(6, 14))
    pythons += (py("/opt/[bold]x[/bold]/python", "3.12.3"),)
    out = lines(pythons_grid(pythons), 50)
    assert out[0] == "python 3.12.3 /opt/[bold]x[/bold]/python"
    assert out[1].startswith(f"       ?      {SHIMS}/python3.6,")
    assert all(line.startswith(" " * 14) for line in out[2:]) and len(out) > 2
    assert all(len(line) <= 50 for line in out)


def test_no_python_says_so() -> None:
    assert lines(pythons_grid(()), 80) == ["python not found"]
