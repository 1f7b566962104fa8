"""One entry point for every tool parser, for `gpudash parse KIND FILE`: saved outputs can be
checked against the parsers without a GPU or a host."""

from __future__ import annotations

from collections.abc import Sequence

from gpudash.probe import TOOL_KINDS
from gpudash.probe.nvcc import parse_nvcc
from gpudash.probe.nvlink import parse_nvlink
from gpudash.probe.p2p import parse_p2p
from gpudash.probe.query import parse_query
from gpudash.probe.smi import parse_smi
from gpudash.probe.topo import parse_topo

KINDS = TOOL_KINDS


def parse_tool(kind: str, text: str, fields: Sequence[str] | None = None) -> dict[str, object]:
    """The parser's public JSON for `text`. Raises ValueError only for an unknown kind."""
    if kind == "topo":
        return parse_topo(text).to_json()
    if kind == "smi":
        return parse_smi(text).to_json()
    if kind == "query":
        return parse_query(text, fields).to_json()
    if kind == "nvlink":
        return parse_nvlink(text).to_json()
    if kind == "nvcc":
        return parse_nvcc(text).to_json()
    if kind == "p2p":
        return parse_p2p(text).to_json()
    raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
