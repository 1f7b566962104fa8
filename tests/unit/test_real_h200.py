"""The real capture from an NVIDIA H200 machine (tests/fixtures/h200-device/, README there):
`gpudash probe --json --save` run on it twice, once through NVML in-process and once through
nvidia-smi (`GPUDASH_NVML=0`). Both paths must describe the same GPUs."""

from __future__ import annotations

import json

import pytest

from gpudash.probe.sections import gpus
from gpudash.saved import load_host
from tests.support import FIXTURES

DEVICE = FIXTURES / "h200-device"
STABLE = (
    "index",
    "name",
    "uuid",
    "bus_id",
    "cc",
    "cc_source",
    "arch",
    "sm",
    "memory_total_mib",
    "power_limit_w",
    "persistence",
    "mig_mode",
    "ecc_uncorrected",
    "error",
)


def gpus_from(save: str) -> gpus.Gpus:
    _rc, error, parts = load_host(DEVICE / save / "localhost").sections["gpus"]
    assert error is None
    return gpus.parse(parts)


def test_nvml_and_nvidia_smi_paths_describe_the_same_gpus():
    nvml, smi = gpus_from("save-nvml"), gpus_from("save-smi")
    assert (nvml.source, smi.source) == ("nvml", "nvidia-smi")
    assert (nvml.driver_version, nvml.cuda_version) == (smi.driver_version, smi.cuda_version)
    assert len(nvml.gpus) == len(smi.gpus) >= 1
    for a, b in zip(nvml.gpus, smi.gpus, strict=True):
        assert {k: getattr(a, k) for k in STABLE} == {k: getattr(b, k) for k in STABLE}
        # Readings taken a second apart: close, not equal.
        assert abs((a.temp_c or 0) - (b.temp_c or 0)) <= 5
        assert abs((a.power_w or 0) - (b.power_w or 0)) <= 50
        assert abs((a.memory_used_mib or 0) - (b.memory_used_mib or 0)) <= 256


@pytest.mark.parametrize("doc", ["probe-nvml.json", "probe-smi.json"])
def test_the_real_probe_answered_every_section(doc: str):
    (host,) = json.loads((DEVICE / doc).read_text())["hosts"]
    assert host["state"] == "ready"
    sections = host["sections"]
    assert set(sections) == {"system", "gpus", "topology", "toolkit", "env", "models", "network"}
    assert all(s["error"] is None for s in sections.values())
    gpu = sections["gpus"]["data"]["gpus"][0]
    assert (gpu["name"], gpu["cc"], gpu["sm"]) == ("NVIDIA H200", "9.0", "sm_90")
    assert any(v["packages"].get("torch") for v in sections["env"]["data"]["venvs"])
