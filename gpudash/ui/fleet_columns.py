"""The fleet view's columns: one short cell per host per key fact, and a sort key for each.

Pure functions of a `HostResult`, so the view only lays them out. A cell is `None` when the
host has not reported that fact (it sorts last and never counts as "different").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from gpudash.model import HostResult
from gpudash.summary import section_line
from gpudash.ui.host_state import short_gpu_name, state_text
from gpudash.ui.render import remote


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    value: Callable[[HostResult], str | None]
    compare: bool = True  # highlight hosts that differ from the most common value


def _gpus(host: HostResult) -> str | None:
    data = host.data("gpus")
    if data is None:
        return None
    if data.missing:
        return "none"
    names = Counter(short_gpu_name(g.name) for g in data.gpus)
    return ", ".join(f"{n}× {name}" for name, n in names.items()) or "none"


def _cc(host: HostResult) -> str | None:
    data = host.data("gpus")
    if data is None or not data.gpus:
        return None
    return ",".join(dict.fromkeys(g.sm or g.cc or "?" for g in data.gpus))


def _nvlink(host: HostResult) -> str | None:
    data = host.data("topology")
    if data is None:
        return None
    return data.missing or data.summary


def _driver(host: HostResult) -> str | None:
    data = host.data("gpus")
    if data is None or data.missing:
        return None
    return f"{data.driver_version or '?'}/{data.cuda_version or '?'}"


def _attr(section: str, *paths: str) -> Callable[[HostResult], str | None]:
    """The first of `paths` (dotted attributes) the section's data has, else its summary."""

    def get(host: HostResult) -> str | None:
        result = host.sections.get(section)
        if result is None or result.data is None:
            return None
        for path in paths:
            value: Any = result.data
            for name in path.split("."):
                value = getattr(value, name, None)
            if value not in (None, ""):
                return str(value)
        return section_line(result)

    return get


def _state(host: HostResult) -> str:
    return state_text(host).plain


COLUMNS: tuple[Column, ...] = (
    Column("host", "host", lambda h: h.name, compare=False),
    Column("state", "state", _state, compare=False),
    Column("gpus", "GPUs", _gpus),
    Column("cc", "cc", _cc),
    Column("nvlink", "NVLink", _nvlink),
    Column("driver", "driver/CUDA", _driver),
    Column("nvcc", "nvcc", _attr("toolkit", "nvcc_version", "nvcc.version")),
    Column("torch", "torch", _attr("env", "torch_version", "torch")),
    Column("models", "models", _attr("models", "count", "total")),
    Column("network", "network", _attr("network", "status", "ok")),
)


def majority(hosts: Iterable[HostResult], column: Column) -> str | None:
    """The most common reported value of a column, when at least two hosts report one."""
    values = [v for h in hosts if (v := column.value(h)) is not None]
    if len(values) < 2:
        return None
    (value, count), *rest = [*Counter(values).most_common(2), (None, 0)]
    return value if count > rest[0][1] else None


MAX_CELL = 28
"""Cells are cut here so that the key columns stay on one 100-column screen."""


def _cut(text: Text) -> Text:
    if text.cell_len > MAX_CELL:
        text.truncate(MAX_CELL - 1)
        text.append("…", style="dim")
    return text


def cell(host: HostResult, column: Column, usual: str | None) -> Text:
    return _cut(_cell(host, column, usual))


def _cell(host: HostResult, column: Column, usual: str | None) -> Text:
    value = column.value(host)
    if column.key == "state":
        return state_text(host)
    if value is None:
        return Text("–", style="dim")
    if column.key == "host":
        return remote(value, style="bold")
    odd = column.compare and usual is not None and value != usual
    return remote(value, style="bold yellow reverse" if odd else "")


def sort_key(host: HostResult, column: Column) -> tuple[int, str]:
    value = column.value(host)
    return (1, "") if value is None else (0, value.lower())
