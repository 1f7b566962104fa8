"""`parse_tool`, the backend of `gpudash parse KIND FILE`."""

from __future__ import annotations

import json

import pytest

from gpudash.probe.tools import parse_tool
from tests.support import FIXTURES


@pytest.mark.parametrize(
    ("kind", "name", "key", "expected"),
    [
        ("topo", "h200-1x/topo_m.txt", "gpus", ["GPU0"]),
        ("smi", "h200-1x/smi.txt", "driver_version", "580.159.04"),
        ("query", "h200-1x/query_csv.txt", "header", None),
        ("nvlink", "h200-1x/nvlink_s.txt", "gpus", []),
        ("nvcc", "h200-1x/nvcc.txt", "release", "13.0"),
    ],
)
def test_parse_tool_returns_the_parsers_json_for_each_kind(
    kind: str, name: str, key: str, expected: object
) -> None:
    data = parse_tool(kind, (FIXTURES / name).read_text())
    json.dumps(data)  # plain JSON types only
    if expected is not None:
        assert data[key] == expected
    else:
        assert data[key][0] == "index"


def test_parse_tool_passes_fields_to_the_query_parser() -> None:
    text = (FIXTURES / "h200-1x/query_csv_nounits.txt").read_text()
    fields = ["index", "name", "uuid", "pci.bus_id", "compute_cap", "memory.total", "driver"]
    assert parse_tool("query", text, fields)["rows"][0]["compute_cap"] == "9.0"


def test_parse_tool_rejects_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        parse_tool("dcgm", "")
