"""Which NVIDIA datacenter and workstation GPU a PCI device id or a driver name is, and its
compute capability: Volta to Blackwell Ultra, as data, each row with where it was read.

Why: drivers older than ~510 have no `--query-gpu=compute_cap`, a GPU in `ERR!` answers
nothing, and the smi table cuts names ("NVIDIA RTX PRO 6000 Blac..."); the PCI device id
(`nvidia-smi -q` "Device Id", `lspci -n`, sysfs) is still there, and so is the name.

Sources (every row names which of them it was read from):
  [pci]  The PCI ID Repository, pci.ids "Version: 2026.08.22" (pci-ids.ucw.cz; read from the
         github.com/pciutils/pciids snapshot c1c12547d626ebf05fd0223144ad87fab5e95d06),
         vendor 10de: the device id and the chip in front of the bracketed product name.
  [drv]  The NVIDIA driver README's supported-chips table, open-gpu-kernel-modules README.md
         at 595.45.04 (df1c9a3de2be4b130f4fc7680f7198193d8ac6ad): the product name the driver
         reports for that device id (the name nvidia-smi prints). Volta is not in it (the open
         modules start at Turing): V100 rows carry [pci] names only.
  [cc]   NVIDIA's CUDA GPUs page, developer.nvidia.com/cuda-gpus (stored copy read
         2026-12-04): 12.0 RTX PRO 6000 Blackwell Server / Workstation / Max-Q; 10.3 GB300,
         B300; 10.0 GB200, B200; 9.0 GH200, H200, H100; 8.9 L4, L40, L40S, RTX 6000 Ada;
         8.6 A40, A10, A16, A2, RTX A6000; 8.0 A100, A30; 7.5 T4 (the 8.0 and 7.5 rows as the
         page printed them before its 2025 redesign, quoted at
         blog.csdn.net/HaoZiHuang/article/details/125834480); 7.0 NVIDIA V100, Quadro GV100
         from its legacy page, developer.nvidia.com/cuda-legacy-gpus.
  [chip] Products NVIDIA's page does not list (A800, H800, H20, L20, A10G/A10M, H100 NVL,
         RTX PRO 6000D): the cc of the chip [pci] names (GA100, GH100, AD102GL, GA102GL,
         GB202GL), which the page gives for its listed products on the same chip.
  [cap]  A real capture that printed the name and compute_cap together
         (tests/fixtures/public/SOURCES.md says where each is from).

Left out, because no source here gives them: device ids of B300 variants other than
3182 (SXM6 AC), of HGX B300 and GB300 boards other than 31c2/31c3, of RTX PRO 6000 Blackwell
variants beyond 2bb1/2bb2/2bb4/2bb5/2bbc, and driver names of V100 parts other than
"Tesla V100-SXM2-16GB" (their names still resolve through the V100 token of
gpudash.probe.arch). Ids listed as "Engineering Sample", "Reserved Dev ID" or with no product
name in pci.ids are not rows.

This module imports nothing: the probe (below checks) reads it too.
"""

from __future__ import annotations

from typing import NamedTuple


class GpuIdentity(NamedTuple):
    device_id: str  # lower-case hex, vendor 10de
    chip: str  # as pci.ids names it
    pci_name: str  # the bracketed pci.ids product name
    driver_name: str | None  # what the driver reports ([drv] or [cap]); None: not read
    cc: str
    source: str  # which of the sources above the id, the name and the cc come from


_V = "[pci] id/name; [cc] legacy page: NVIDIA V100 7.0"
_T = "[pci] id/name; [drv] name; [cc] T4 7.5"
_A = "[pci] id/name; [drv] name; [cc] A100/A30 8.0"
_A8 = "[pci] id/name; [drv] name; [chip] GA100 8.0 (A800 not on the page)"
_GA102 = "[pci] id/name; [drv] name; [cc] A40/A10/A16/A2/RTX A6000 8.6"
_ADA = "[pci] id/name; [drv] name; [cc] L4/L40/L40S/RTX 6000 Ada 8.9"
_H = "[pci] id/name; [drv] name; [cc] H100/H200/GH200 9.0"
_HC = "[pci] id/name; [drv] name; [chip] GH100 9.0 (not on the page)"
_B = "[pci] id/name; [drv] name; [cc] B200/GB200 10.0"
_BU = "[pci] id/name; [drv] name; [cc] B300/GB300 10.3"
_RTXPRO = "[pci] id/name; [drv] name; [cc] RTX PRO 6000 Blackwell 12.0"

GPUS: tuple[GpuIdentity, ...] = (
    # Volta (GV100)
    GpuIdentity(
        "1db1", "GV100GL", "Tesla V100 SXM2 16GB", "Tesla V100-SXM2-16GB", "7.0", _V + "; [cap]"
    ),
    GpuIdentity("1db2", "GV100GL", "Tesla V100 DGXS 16GB", None, "7.0", _V),
    GpuIdentity("1db3", "GV100GL", "Tesla V100 FHHL 16GB", None, "7.0", _V),
    GpuIdentity("1db4", "GV100GL", "Tesla V100 PCIe 16GB", None, "7.0", _V),
    GpuIdentity("1db5", "GV100GL", "Tesla V100 SXM2 32GB", None, "7.0", _V),
    GpuIdentity("1db6", "GV100GL", "Tesla V100 PCIe 32GB", None, "7.0", _V),
    GpuIdentity("1db7", "GV100GL", "Tesla V100 DGXS 32GB", None, "7.0", _V),
    GpuIdentity("1db8", "GV100GL", "Tesla V100 SXM3 32GB", None, "7.0", _V),
    GpuIdentity("1dba", "GV100GL", "Quadro GV100", None, "7.0", _V + "; Quadro GV100 7.0"),
    GpuIdentity("1df5", "GV100GL", "Tesla V100 SXM2 16GB", None, "7.0", _V),
    GpuIdentity("1df6", "GV100GL", "Tesla V100S PCIe 32GB", None, "7.0", _V),
    # Turing
    GpuIdentity("1eb8", "TU104GL", "Tesla T4", "Tesla T4", "7.5", _T),
    # Ampere GA100
    GpuIdentity("20b0", "GA100", "A100 SXM4 40GB", "NVIDIA A100-SXM4-40GB", "8.0", _A),
    GpuIdentity("20b1", "GA100", "A100 PCIe 40GB", None, "8.0", _A.replace("; [drv] name", "")),
    GpuIdentity("20b2", "GA100", "A100 SXM4 80GB", "NVIDIA A100-SXM4-80GB", "8.0", _A),
    GpuIdentity("20b3", "GA100", "A100-SXM-64GB", "NVIDIA A100-SXM-64GB", "8.0", _A),
    GpuIdentity("20b5", "GA100", "A100 PCIe 80GB", "NVIDIA A100 80GB PCIe", "8.0", _A),
    GpuIdentity("20b7", "GA100GL", "A30 PCIe", "NVIDIA A30", "8.0", _A),
    GpuIdentity("20bd", "GA100", "A800 SXM4 40GB", "NVIDIA A800-SXM4-40GB", "8.0", _A8),
    GpuIdentity("20f1", "GA100", "A100 PCIe 40GB", "NVIDIA A100-PCIE-40GB", "8.0", _A),
    GpuIdentity("20f3", "GA100", "A800-SXM4-80GB", "NVIDIA A800-SXM4-80GB", "8.0", _A8),
    GpuIdentity("20f5", "GA100", "A800 80GB PCIe", "NVIDIA A800 80GB PCIe", "8.0", _A8),
    GpuIdentity("20f6", "GA100", "A800 40GB PCIe", "NVIDIA A800 40GB Active", "8.0", _A8),
    # Ampere GA102 / GA107
    GpuIdentity("2230", "GA102GL", "RTX A6000", "NVIDIA RTX A6000", "8.6", _GA102),
    GpuIdentity("2235", "GA102GL", "A40", "NVIDIA A40", "8.6", _GA102),
    GpuIdentity("2236", "GA102GL", "A10", "NVIDIA A10", "8.6", _GA102),
    GpuIdentity("2237", "GA102GL", "A10G", "NVIDIA A10G", "8.6", _GA102 + "; [chip] A10G"),
    GpuIdentity("2238", "GA102GL", "A10M", "NVIDIA A10M", "8.6", _GA102 + "; [chip] A10M"),
    # 25b6 is both the A16 and the A2 ([drv] tells them apart by subsystem id): both 8.6.
    GpuIdentity("25b6", "GA107GL", "A2 / A16", "NVIDIA A16", "8.6", _GA102),
    GpuIdentity("25b6", "GA107GL", "A2 / A16", "NVIDIA A2", "8.6", _GA102),
    # Ada
    GpuIdentity(
        "26b1", "AD102GL", "RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation", "8.9", _ADA
    ),
    GpuIdentity("26b5", "AD102GL", "L40", "NVIDIA L40", "8.9", _ADA),
    GpuIdentity("26b9", "AD102GL", "L40S", "NVIDIA L40S", "8.9", _ADA),
    GpuIdentity("26ba", "AD102GL", "L20", "NVIDIA L20", "8.9", _ADA + "; [chip] L20"),
    GpuIdentity("27b8", "AD104GL", "L4", "NVIDIA L4", "8.9", _ADA),
    # Hopper
    GpuIdentity("2321", "GH100", "H100L 94GB", "NVIDIA H100 NVL", "9.0", _H),
    GpuIdentity("2322", "GH100", "H800 PCIe", "NVIDIA H800 PCIe", "9.0", _HC),
    GpuIdentity("2324", "GH100", "H800", "NVIDIA H800", "9.0", _HC),
    GpuIdentity("2329", "GH100", "H20", "NVIDIA H20", "9.0", _HC),
    GpuIdentity("232c", "GH100", "H20 HBM3e", "NVIDIA H20-3e", "9.0", _HC),
    GpuIdentity("230e", "GH100", "H20 NVL16", "NVIDIA H20 NVL16", "9.0", _HC),
    GpuIdentity("2330", "GH100", "H100 SXM5 80GB", "NVIDIA H100 80GB HBM3", "9.0", _H),
    GpuIdentity("2331", "GH100", "H100 PCIe", "NVIDIA H100 PCIe", "9.0", _H),
    GpuIdentity("2335", "GH100", "H200 SXM 141GB", "NVIDIA H200", "9.0", _H),
    GpuIdentity("2336", "GH100", "H100", None, "9.0", _H.replace("; [drv] name", "")),
    GpuIdentity("2337", "GH100", "H100 SXM5 64GB", None, "9.0", _H.replace("; [drv] name", "")),
    GpuIdentity("2338", "GH100", "H100 SXM5 96GB", None, "9.0", _H.replace("; [drv] name", "")),
    GpuIdentity("2339", "GH100", "H100 SXM5 94GB", "NVIDIA H100", "9.0", _H),
    GpuIdentity("233a", "GH100", "H800L 94GB", "NVIDIA H800 NVL", "9.0", _HC),
    GpuIdentity("233b", "GH100", "H200 NVL", "NVIDIA H200 NVL", "9.0", _H),
    GpuIdentity("233d", "GH100", "H100 96GB", None, "9.0", _H.replace("; [drv] name", "")),
    GpuIdentity("2342", "GH100", "GH200 120GB / 480GB", "NVIDIA GH200 120GB", "9.0", _H),
    GpuIdentity("2342", "GH100", "GH200 120GB / 480GB", "NVIDIA GH200 480GB", "9.0", _H),
    GpuIdentity("2348", "GH100", "GH200 144G HBM3e", "NVIDIA GH200 144G HBM3e", "9.0", _H),
    # Blackwell
    GpuIdentity("2901", "GB100", "B200", "NVIDIA B200", "10.0", _B),
    GpuIdentity("2909", "GB100", "HGX B200 168GB", None, "10.0", _B.replace("; [drv] name", "")),
    GpuIdentity("2941", "GB100", "HGX GB200", "NVIDIA GB200", "10.0", _B),
    # Blackwell Ultra
    GpuIdentity("3182", "GB110", "B300 SXM6 AC", "NVIDIA B300 SXM6 AC", "10.3", _BU + "; [cap]"),
    GpuIdentity("31c2", "GB110", "GB300", "NVIDIA GB300", "10.3", _BU),
    GpuIdentity("31c3", "GB110", "GB300", None, "10.3", _BU.replace("; [drv] name", "")),
    # RTX PRO 6000 Blackwell (GB202GL)
    GpuIdentity(
        "2bb1",
        "GB202GL",
        "RTX PRO 6000 Blackwell Workstation Edition",
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        "12.0",
        _RTXPRO,
    ),
    GpuIdentity(
        "2bb2",
        "GB202GL",
        "RTX PRO 6000D Blackwell Workstation Edition",
        None,
        "12.0",
        "[pci] id/name; [chip] GB202GL 12.0 (6000D not on the page)",
    ),
    GpuIdentity(
        "2bb4",
        "GB202GL",
        "RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        "12.0",
        _RTXPRO + "; [cap] lspci 2bb4 + compute_cap 12.0",
    ),
    GpuIdentity(
        "2bb5",
        "GB202GL",
        "RTX PRO 6000 Blackwell Server Edition",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "12.0",
        _RTXPRO,
    ),
    GpuIdentity(
        "2bbc",
        "GB202GL",
        "RTX PRO 6000D Blackwell Max-Q Workstation Edition",
        None,
        "12.0",
        "[pci] id/name; [chip] GB202GL 12.0 (6000D not on the page)",
    ),
)

BY_DEVICE_ID: dict[str, tuple[str, str]] = {}
"""Device id -> (product, cc). Where one id is two products (25b6: A16 and A2), both have
the same cc and the product is written as pci.ids names it."""
for _row in GPUS:
    _product = _row.driver_name or _row.pci_name
    if _row.device_id in BY_DEVICE_ID:
        _product = _row.pci_name
    BY_DEVICE_ID[_row.device_id] = (_product, _row.cc)

BY_NAME: dict[str, str] = {r.driver_name: r.cc for r in GPUS if r.driver_name}
"""Full driver names -> cc, for exact and truncated ("...") names."""

BY_PCI_NAME: dict[str, str] = {r.pci_name: r.cc for r in GPUS}
"""pci.ids product names (what `lspci` prints in brackets) -> cc, for exact matches."""
