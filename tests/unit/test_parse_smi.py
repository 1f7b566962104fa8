"""The default `nvidia-smi` table over verbatim captures and public reports."""

from __future__ import annotations

import pytest

from gpudash.probe.smi import parse_smi
from tests.support import FIXTURES


def read(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


# file, driver, cuda, GPUs, first GPU name, used/total MiB of GPU 0, power W, persistence, MIG
CASES = [
    ("h200-1x/smi.txt", "580.159.04", "13.0", 1, "NVIDIA H200", (0, 143771), 78.0, "On",
     "Disabled"),
    ("public/smi-p100-470-79col.txt", "470.82.01", "11.4", 1, "Tesla P100-PCIE...",
     (0, 16280), 31.0, "Off", None),
    ("public/smi-gtx1650-610-kmd-umd.txt", "610.57.04", "13.3", 1, "NVIDIA GeForce GTX 1650",
     (580, 4096), None, "Off", None),
    ("public/smi-a40-8x-525-err.txt", "525.60.13", "12.0", 8, "NVIDIA A40", (0, 46068), 14.0,
     "On", None),
    ("public/smi-a100-80gb-570-mig.txt", "570.148.08", "12.8", 1, "NVIDIA A100 80GB PCIe",
     (249, 81920), 90.0, "On", "Enabled"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "driver", "cuda", "count", "gpu_name", "memory", "power", "pm", "mig"), CASES
)
def test_smi_reads_versions_and_gpu_rows_from_each_table_shape(
    name: str,
    driver: str,
    cuda: str,
    count: int,
    gpu_name: str,
    memory: tuple[int, int],
    power: float | None,
    pm: str,
    mig: str | None,
) -> None:
    data = parse_smi(read(name)).to_json()
    assert (data["driver_version"], data["cuda_version"]) == (driver, cuda)
    assert len(data["gpus"]) == count
    first = data["gpus"][0]
    assert first["index"] == 0
    assert first["name"] == gpu_name
    assert (first["memory_used_mib"], first["memory_total_mib"]) == memory
    assert first["power_w"] == power
    assert first["persistence_mode"] == pm
    assert first["mig_mode"] == mig
    assert first["error"] is False


def test_smi_reads_the_h200_row_as_numbers() -> None:
    gpu = parse_smi(read("h200-1x/smi.txt")).gpus[0]
    assert gpu.bus_id == "00000000:00:06.0"
    assert (gpu.fan, gpu.temp_c, gpu.perf_state) == (None, 39, "P0")
    assert (gpu.power_w, gpu.power_cap_w, gpu.util_percent, gpu.uncorrected_ecc) == (
        78.0, 700.0, 0, 0,
    )  # fmt: skip


def test_smi_flags_the_err_gpu_and_nulls_its_fields() -> None:
    table = parse_smi(read("public/smi-a40-8x-525-err.txt"))
    broken = [g for g in table.gpus if g.error]
    assert [g.index for g in broken] == [4]
    gpu = broken[0]
    assert gpu.name is None
    assert gpu.bus_id == "00000000:83:00.0"
    assert (gpu.fan, gpu.temp_c, gpu.power_w, gpu.util_percent) == (None, None, None, None)
    assert gpu.memory_total_mib == 46068
    assert table.gpus[2].memory_used_mib == 821


def test_smi_reads_the_process_list() -> None:
    procs = parse_smi(read("public/smi-a40-8x-525-err.txt")).to_json()["processes"]
    assert procs == [
        {"gpu": 2, "pid": 2111354, "type": "C", "name": "...eratornet/venv/bin/python",
         "memory_mib": 818}
    ]  # fmt: skip
    assert parse_smi(read("h200-1x/smi.txt")).processes == ()


def test_smi_does_not_mistake_mig_devices_for_gpus() -> None:
    table = parse_smi(read("public/smi-a100-80gb-570-mig.txt"))
    assert len(table.gpus) == 1
    assert [(m.gi, m.mig, m.memory_total_mib) for m in table.mig_devices] == [
        (1, 0, 40192), (5, 1, 19968), (13, 2, 9728), (14, 3, 9728),
    ]  # fmt: skip
    assert table.gpus[0].util_percent is None  # N/A under MIG


def test_smi_reads_the_590_plus_kmd_and_umd_labels() -> None:
    data = parse_smi(read("public/smi-gtx1650-610-kmd-umd.txt")).to_json()
    assert data["driver_version"] == "610.57.04"
    assert data["cuda_version"] == "13.3"
    gpu = data["gpus"][0]
    assert (gpu["fan"], gpu["power_w"], gpu["power_cap_w"], gpu["util_percent"]) == (
        0, None, 75.0, 39,
    )  # fmt: skip


def test_smi_turns_a_device_handle_error_line_into_an_error_gpu() -> None:
    text = "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error\n"
    data = parse_smi(text).to_json()
    assert data["gpus"][0]["bus_id"] == "0000:0B:00.0"
    assert data["gpus"][0]["error"] is True
    assert data["driver_version"] is None


def test_smi_reads_an_indented_crlf_paste() -> None:
    text = read("h200-1x/smi.txt")
    pasted = "".join("    " + line + "\r\n" for line in text.split("\n"))
    assert parse_smi(pasted).to_json() == parse_smi(text).to_json()


def test_smi_to_json_has_exactly_the_public_keys() -> None:
    data = parse_smi(read("public/smi-a40-8x-525-err.txt")).to_json()
    assert set(data) == {"driver_version", "cuda_version", "gpus", "processes"}
    assert set(data["gpus"][0]) == {
        "index", "name", "bus_id", "fan", "temp_c", "perf_state", "power_w", "power_cap_w",
        "memory_used_mib", "memory_total_mib", "util_percent", "uncorrected_ecc", "mig_mode",
        "persistence_mode", "error",
    }  # fmt: skip
    assert set(data["processes"][0]) == {"gpu", "pid", "type", "name", "memory_mib"}
