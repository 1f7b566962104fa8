"""`nvidia-smi --query-gpu` CSV over verbatim captures."""

from __future__ import annotations

import pytest

from gpudash.probe.query import field_name, integer, number, parse_query, text
from tests.support import FIXTURES

NOUNITS_FIELDS = [
    "index", "name", "uuid", "pci.bus_id", "compute_cap", "memory.total", "driver_version",
]  # fmt: skip


def read(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


def test_query_reads_the_h200_row_with_units_in_the_header_only() -> None:
    table = parse_query(read("h200-1x/query_csv.txt"))
    assert table.header[5] == "memory.total [MiB]"
    (row,) = table.rows
    assert row["name"] == "NVIDIA H200"
    assert row["compute_cap"] == "9.0"
    assert row["memory.total"] == "143771 MiB"
    assert number(row["power.draw"]) == 78.73
    assert integer(row["memory.total"]) == 143771
    assert row["mig.mode.current"] == "Disabled"
    assert table.notes == ()


def test_query_names_noheader_columns_from_the_fields_given() -> None:
    data = parse_query(read("h200-1x/query_csv_nounits.txt"), NOUNITS_FIELDS).to_json()
    assert data["header"] == NOUNITS_FIELDS
    assert data["rows"] == [
        {"index": "0", "name": "NVIDIA H200", "uuid": "GPU-9f16c755-ed0b-7acb-3b4a-4eac310d0d7b",
         "pci.bus_id": "00000000:00:06.0", "compute_cap": "9.0", "memory.total": "143771",
         "driver_version": "580.159.04"}
    ]  # fmt: skip


def test_query_keeps_every_row_of_an_8x_table_without_an_index_column() -> None:
    table = parse_query(read("public/query-h200-8x-pcie-csv.txt"))
    assert len(table.rows) == 8
    assert {r["pcie.link.gen.max"] for r in table.rows} == {"5"}
    assert integer(table.rows[7]["memory.total"]) == 143771


def test_query_takes_the_last_complete_loop_block_per_gpu() -> None:
    table = parse_query(read("public/query-h200-1x-varied-loop.txt"))
    (row,) = table.rows
    assert row["memory.used"] == "1024 MiB"
    assert any("3 cells for 18 columns" in n for n in table.notes)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("78.73 W", 78.73),
        ("143771 MiB", 143771.0),
        ("0 %", 0.0),
        ("9.0", 9.0),
        ("345 MHz", 345.0),
        ("[N/A]", None),
        ("[Not Supported]", None),
        ("ERR!", None),
        ("N/A", None),
        ("", None),
        ("Enabled", None),
    ],
)
def test_query_number_reads_values_with_units_and_none_for_markers(
    value: str, expected: float | None
) -> None:
    assert number(value) == expected


def test_query_text_and_field_name_helpers() -> None:
    assert text(" Enabled ") == "Enabled"
    assert text("[Not Supported]") is None
    assert field_name("utilization.gpu [%]") == "utilization.gpu"


def test_query_an_error_message_gives_no_rows_and_a_note() -> None:
    table = parse_query('Field "compute_cap" is not a valid field to query.\n')
    assert table.rows == ()
    assert table.notes
