"""Compute capability from the PCI device id and from the name, for every NVIDIA datacenter
and workstation GPU since Volta (issue 31, item 9). The table and its sources are in
gpudash/checks/facts/gpu_identity.py; the ids below were read from pci.ids and the driver
README, the ccs from NVIDIA's CUDA GPUs page, as the module says."""

from __future__ import annotations

import re

import pytest

from gpudash.checks.facts.gpu_identity import GPUS
from gpudash.probe.arch import cc_from_name as cc_from_token
from gpudash.probe.gpu_ids import cc_from_name, cc_from_pci_id
from tests.support import FIXTURES
from tests.support.hosts import host

PUBLIC = FIXTURES / "public"

_PRO = "NVIDIA RTX PRO 6000 Blackwell"
# (product the brief names, a device id, the name a host shows, cc)
PRODUCTS = [
    ("V100 SXM2 16GB", "1db1", "Tesla V100-SXM2-16GB", "7.0"),
    ("V100 SXM2 32GB", "1db5", "Tesla V100 SXM2 32GB", "7.0"),
    ("V100 PCIe 16GB", "1db4", "Tesla V100 PCIe 16GB", "7.0"),
    ("V100 PCIe 32GB", "1db6", "Tesla V100 PCIe 32GB", "7.0"),
    ("V100S PCIe 32GB", "1df6", "Tesla V100S PCIe 32GB", "7.0"),
    ("V100 SXM3 32GB (DGX-2)", "1db8", "Tesla V100 SXM3 32GB", "7.0"),
    ("T4", "1eb8", "Tesla T4", "7.5"),
    ("A100 SXM4 40GB", "20b0", "NVIDIA A100-SXM4-40GB", "8.0"),
    ("A100 SXM4 80GB", "20b2", "NVIDIA A100-SXM4-80GB", "8.0"),
    ("A100 PCIe 80GB", "20b5", "NVIDIA A100 80GB PCIe", "8.0"),
    ("A100 PCIe 40GB", "20f1", "NVIDIA A100-PCIE-40GB", "8.0"),
    ("A800 SXM4 80GB", "20f3", "NVIDIA A800-SXM4-80GB", "8.0"),
    ("A800 PCIe 80GB", "20f5", "NVIDIA A800 80GB PCIe", "8.0"),
    ("A30", "20b7", "NVIDIA A30", "8.0"),
    ("A10", "2236", "NVIDIA A10", "8.6"),
    ("A10G", "2237", "NVIDIA A10G", "8.6"),
    ("A16", "25b6", "NVIDIA A16", "8.6"),
    ("A2", "25b6", "NVIDIA A2", "8.6"),
    ("A40", "2235", "NVIDIA A40", "8.6"),
    ("RTX A6000", "2230", "NVIDIA RTX A6000", "8.6"),
    ("L4", "27b8", "NVIDIA L4", "8.9"),
    ("L40", "26b5", "NVIDIA L40", "8.9"),
    ("L40S", "26b9", "NVIDIA L40S", "8.9"),
    ("L20", "26ba", "NVIDIA L20", "8.9"),
    ("RTX 6000 Ada", "26b1", "NVIDIA RTX 6000 Ada Generation", "8.9"),
    ("H100 PCIe", "2331", "NVIDIA H100 PCIe", "9.0"),
    ("H100 SXM5 80GB", "2330", "NVIDIA H100 80GB HBM3", "9.0"),
    ("H100 NVL", "2321", "NVIDIA H100 NVL", "9.0"),
    ("H800", "2324", "NVIDIA H800", "9.0"),
    ("H20", "2329", "NVIDIA H20", "9.0"),
    ("H20-3e", "232c", "NVIDIA H20-3e", "9.0"),
    ("H200", "2335", "NVIDIA H200", "9.0"),
    ("H200 NVL", "233b", "NVIDIA H200 NVL", "9.0"),
    ("GH200 480GB", "2342", "NVIDIA GH200 480GB", "9.0"),
    ("GH200 144G", "2348", "NVIDIA GH200 144G HBM3e", "9.0"),
    ("B200", "2901", "NVIDIA B200", "10.0"),
    ("GB200", "2941", "NVIDIA GB200", "10.0"),
    ("B300", "3182", "NVIDIA B300 SXM6 AC", "10.3"),
    ("GB300", "31c2", "NVIDIA GB300", "10.3"),
    ("RTX PRO 6000 WS", "2bb1", f"{_PRO} Workstation Edition", "12.0"),
    ("RTX PRO 6000 Max-Q", "2bb4", f"{_PRO} Max-Q Workstation Edition", "12.0"),
    ("RTX PRO 6000 Server", "2bb5", f"{_PRO} Server Edition", "12.0"),
    ("RTX PRO 6000 Server, cut by nvidia-smi", "2bb5", "NVIDIA RTX PRO 6000 Blac...", "12.0"),
    ("RTX PRO 6000D", "2bb2", "RTX PRO 6000D Blackwell Workstation Edition", "12.0"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("product", "device", "name", "cc"), PRODUCTS, ids=[p[0] for p in PRODUCTS]
)
def test_every_datacenter_and_workstation_gpu_since_volta_has_its_cc_by_id_and_by_name(
    product, device, name, cc
):
    assert cc_from_pci_id(device) == cc
    assert cc_from_pci_id(f"10de:{device}") == cc  # lspci -n
    assert cc_from_pci_id(f"0x{device.upper()}10DE") == cc  # nvidia-smi -q "Device Id"
    assert (cc_from_name(name) or cc_from_token(name)) == cc


# pci.ids names the chip; a chip has one compute capability (NVIDIA's CUDA GPUs page).
CHIP_CC = {"GV100": "7.0", "TU10": "7.5", "GA100": "8.0", "GA10": "8.6", "AD10": "8.9"}
CHIP_CC |= {"GH100": "9.0", "GB100": "10.0", "GB110": "10.3", "GB202": "12.0"}


def test_every_row_has_a_source_and_agrees_with_its_chip():
    for row in GPUS:
        assert re.fullmatch(r"[0-9a-f]{4}", row.device_id), row
        assert "[pci]" in row.source and ("[cc]" in row.source or "[chip]" in row.source), row
        chip = next(c for c in sorted(CHIP_CC, key=len, reverse=True) if row.chip.startswith(c))
        assert CHIP_CC[chip] == row.cc, row


def test_one_device_id_never_means_two_ccs():
    ccs: dict[str, set[str]] = {}
    for row in GPUS:
        ccs.setdefault(row.device_id, set()).add(row.cc)
    assert {d: c for d, c in ccs.items() if len(c) > 1} == {}


def test_the_real_captures_that_print_name_and_cc_agree_with_the_table():
    for path in ("query-v100-name-cc.txt", "query-b300-7x-610-name-cc.txt"):
        lines = (PUBLIC / path).read_text().splitlines()[1:]
        for line in lines:
            *_, name, cc = (c.strip() for c in line.split(","))
            assert cc_from_name(name) == cc, (path, name)
    lspci = (PUBLIC / "lspci-rtxpro6000-maxq-2bb4.txt").read_text()
    assert "2bb4" in lspci and cc_from_pci_id("2bb4") == "12.0"


def test_an_id_or_name_not_in_the_table_is_unknown_not_guessed():
    assert cc_from_pci_id("10de:1dbe") is None  # "GV100 Engineering Sample": left out
    assert cc_from_pci_id("8086:2335") is None  # another vendor's device 2335
    assert cc_from_name("NVIDIA H") is None
    assert cc_from_name("NVIDIA RTX PRO 6...") is None  # too short to be the table's cut


def test_the_gpus_section_takes_the_cc_from_the_device_id_when_the_driver_has_no_compute_cap():
    """The probe's fallback query (QUERY_FIELDS_MIN, for drivers without compute_cap): the
    V100 SXM2 32GB's id 0x1DB510DE (pci.ids) gives 7.0 although the name says nothing."""
    query = (
        "index, name, uuid, pci.bus_id, memory.total [MiB], memory.used [MiB], "
        "driver_version, pci.device_id\n"
        "0, Graphics Device, GPU-0, 00000000:06:00.0, 32510 MiB, 0 MiB, 470.82.01, 0x1DB510DE\n"
    )
    gpu = host(gpus={"query": query}).sections["gpus"].data.gpus[0]
    assert (gpu.cc, gpu.cc_source) == ("7.0", "pci_id")
