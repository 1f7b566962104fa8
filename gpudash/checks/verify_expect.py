"""What each GPU model should reach in the verify task: published peaks and all-reduce ranges.

Peaks are the vendor's dense (no 2:4 sparsity) bf16 tensor rate with FP32 accumulate, which
is what `torch.matmul` on bf16 uses, and the memory bandwidth. Nothing reaches a peak: the
floors below which gpudash warns are its own choice, written as fractions of the peak next
to the real H200 run that calibrated them (tests/fixtures/verify/h200-1x.json: 671-686 TFLOP/s
= 68-69 % of 989, a 1 GiB copy 4246 GB/s = 88 % of 4800). The matmul is measured sustained,
and sustained bf16 work holds an H200 at its 700 W cap: the SM clock falls from 1980 to
~1470 MHz and the rate from ~787 TFLOP/s (a 10-product burst) to ~670 (device2.log and
device2-smi-samples.csv beside that fixture).

All-reduce ranges are nccl-tests' busbw for large messages with NVLink SHARP (NVLS) off, as
the verify task runs it: with NVLS on, H100 boards show ~480 GB/s instead of ~370.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MATMUL_FLOOR = 0.55
"""Below this fraction of the dense bf16 peak a host's median is a WARN (the real H200: 0.68)."""
COPY_FLOOR = 0.70
"""Below this fraction of the memory bandwidth a host's median copy is a WARN (H200: 0.88)."""
FAIL_FRACTION = 0.5
"""Below this fraction of the floor (matmul, copy, busbw) the WARN becomes a FAIL."""
LINK_FLOOR = 0.5
"""H2D or D2H below this fraction of the PCIe link's rate is a WARN (H200 Gen5 x16: 0.88)."""


@dataclass(frozen=True)
class GpuPeak:
    model: str
    pattern: str  # regex over the upper-cased CUDA/NVML name
    bf16_tflops: float  # dense, FP32 accumulate
    mem_gbps: float
    fabric: str | None  # key into BUSBW when the board's GPUs are all NVLink/NVSwitch peers
    source: str


# First match wins: specific names (NVL, PCIe, 40GB) before the family.
PEAKS: tuple[GpuPeak, ...] = (
    # https://www.nvidia.com/en-us/data-center/h200/ (H200 datasheet, "H200 SXM" / "H200 NVL"
    # columns, read 2026-12; BF16 1,979 / 1,671 TFLOPS are with sparsity: dense is half), and
    # this project's device notes (H200.md: dense bf16 about 990, 4.8 TB/s).
    GpuPeak("H200 NVL", r"\bH200 NVL\b", 835.0, 4800.0, None, "nvidia.com/en-us/data-center/h200/"),
    GpuPeak(
        "H200 SXM", r"\bH200\b", 989.0, 4800.0, "nvlink4", "nvidia.com/en-us/data-center/h200/"
    ),
    # https://www.nvidia.com/en-us/data-center/h100/ (H100 datasheet, SXM / PCIe / NVL columns,
    # read 2026-12: BF16 1,979 / 1,513 / 1,671 TFLOPS with sparsity; 3.35 / 2.0 / 3.9 TB/s).
    GpuPeak("H100 NVL", r"\bH100 NVL\b", 835.0, 3900.0, None, "nvidia.com/en-us/data-center/h100/"),
    GpuPeak(
        "H100 PCIe", r"\bH100 PCIE\b", 756.0, 2000.0, None, "nvidia.com/en-us/data-center/h100/"
    ),
    GpuPeak(
        "H100 SXM", r"\bH100\b", 989.0, 3350.0, "nvlink4", "nvidia.com/en-us/data-center/h100/"
    ),
    # NVIDIA Blackwell Architecture Technical Brief, Table 3 (per-GPU HGX specs), as quoted by
    # https://glennklockwood.com/garden/processors/B200 and .../B300 (read 2026-12): HGX B200 at
    # 1,000 W and HGX B300 both 2,250 dense BF16 TFLOPS; 8 TB/s HBM3e.
    GpuPeak(
        "B300", r"\bB300\b", 2250.0, 8000.0, "nvlink5", "glennklockwood.com/garden/processors/B300"
    ),
    GpuPeak(
        "B200", r"\bB200\b", 2250.0, 8000.0, "nvlink5", "glennklockwood.com/garden/processors/B200"
    ),
    # https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/
    # nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (A100 datasheet r4): BF16 312 dense;
    # 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s, 40GB 1,555 GB/s.
    GpuPeak(
        "A100 40GB", r"\bA100\b.*\b40GB\b", 312.0, 1555.0, "nvlink3", "nvidia-a100-datasheet r4"
    ),
    GpuPeak("A100 PCIe", r"\bA100\b.*\bPCIE\b", 312.0, 1935.0, None, "nvidia-a100-datasheet r4"),
    GpuPeak("A100 SXM", r"\bA100\b", 312.0, 2039.0, "nvlink3", "nvidia-a100-datasheet r4"),
    # https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413 (L40S datasheet, read 2026-12):
    # BF16 362.05 TFLOPS dense (733 with sparsity), 864 GB/s GDDR6.
    GpuPeak("L40S", r"\bL40S\b", 362.0, 864.0, None, "L40S datasheet"),
    # NVIDIA Ada Lovelace GPU Architecture whitepaper v1.01, Appendix A, Table 2: RTX 4090 peak
    # BF16 tensor with FP32 accumulate 165.2 TFLOPS dense; 1,008 GB/s GDDR6X.
    GpuPeak("RTX 4090", r"\bRTX 4090\b", 165.2, 1008.0, None, "Ada whitepaper v1.01"),
    # NVIDIA RTX Blackwell GPU Architecture whitepaper v1.0 (RTX 5090 column): FP16/BF16 tensor
    # with FP32 accumulate 209.5 TFLOPS dense; 1,792 GB/s GDDR7.
    GpuPeak("RTX 5090", r"\bRTX 5090\b", 209.5, 1792.0, None, "RTX Blackwell whitepaper v1.0"),
    # https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/
    # (datasheet, Workstation Edition 600 W), figures as listed by
    # https://hmc-tech.com/gpu/nvidia-rtx-pro-6000-blackwell-vs-amd-radeon-pro-duo-polaris
    # (read 2026-12): BF16 tensor 503.8 TFLOPS dense; 1,792 GB/s GDDR7 (512-bit, 28 Gbps).
    # The Max-Q (300 W) edition is clocked lower: its peak is not in this table.
    GpuPeak(
        "RTX PRO 6000",
        r"\bRTX PRO 6000\b(?!.*MAX Q)",
        503.8,
        1792.0,
        None,
        "RTX PRO 6000 datasheet",
    ),
)
_COMPILED = tuple((re.compile(p.pattern), p) for p in PEAKS)


@dataclass(frozen=True)
class BusbwRange:
    fabric: str
    low: float  # GB/s busbw, large messages, NVLS off
    high: float
    source: str


BUSBW: dict[str, BusbwRange] = {
    # NVLink 4 + NVSwitch (HGX H100/H200): ring all-reduce busbw 365-370 GB/s from 2 to 8 GPUs
    # (https://github.com/NVIDIA/nccl/issues/1455, 2024-09-19); "NCCL can get an effective NVLink
    # bandwidth of 370GB/s" without NVLS, ~480 with it (S. Jeaugey, NCCL maintainer,
    # https://github.com/NVIDIA/nccl-tests/issues/212, comment of 2024-05-06); 8x H100 NVLS
    # off 370 / on 480 (https://github.com/NVIDIA/nccl/issues/2140, NCCL 2.30.4, 2026-04-28).
    "nvlink4": BusbwRange("nvlink4", 330.0, 380.0, "NVIDIA/nccl#1455, nccl-tests#212, nccl#2140"),
    # NVLink 5 + NVSwitch (HGX B200/B300): 8x B300 NVLS off 695 GB/s, on 845
    # (https://github.com/NVIDIA/nccl/issues/2140, NCCL 2.30.4, 2026-04-28). B200 has the same
    # NVLink 5 fabric (1.8 TB/s per GPU); no NVLS-off B200 figure was found, so it shares this row.
    "nvlink5": BusbwRange("nvlink5", 620.0, 720.0, "NVIDIA/nccl#2140"),
    # NVLink 3 + NVSwitch (HGX A100, no NVLS on A100): 8x A100 SXM4 230-250 GB/s
    # (https://docs.alayanew.com/en/docs/tech-blog/2026-05-06-nccl-tests, 2026-05-06); 220 GB/s
    # once P2P was re-enabled (https://github.com/NVIDIA/nccl-tests/issues/228, 2024-06-26).
    "nvlink3": BusbwRange(
        "nvlink3", 210.0, 250.0, "alayanew nccl-tests 2026-05-06, nccl-tests#228"
    ),
}


def peak_for(name: str | None) -> GpuPeak | None:
    """The table row for a CUDA/NVML GPU name ("NVIDIA H200", "NVIDIA A100-SXM4-80GB")."""
    if not isinstance(name, str):
        return None
    text = " ".join(re.split(r"[\s\-_/]+", name.upper()))
    for pattern, peak in _COMPILED:
        if pattern.search(text):
            return peak
    return None


# PCIe per-lane payload rate per direction, GB/s, after line coding (8b/10b for Gen1-2,
# 128b/130b for Gen3-5, FLIT for Gen6): https://en.wikipedia.org/wiki/PCI_Express, "PCI Express
# link performance" table (revision of 2025). x16 gives 15.75 / 31.5 / 63 / 121 GB/s for Gen3-6.
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def pcie_gbps(gen: int | None, width: int | None) -> float | None:
    """What a PCIe link carries per direction, GB/s; None when gen or width is unknown."""
    if gen is None or width is None or gen not in PCIE_LANE_GBPS or width <= 0:
        return None
    return PCIE_LANE_GBPS[gen] * width
