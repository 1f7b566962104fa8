"""`nvidia-smi -q` (the full text report, or any `-d` subset of it) -> per-GPU health facts.

The report is an indented tree of `Key : Value` lines, one subtree per `GPU 00000000:BB:DD.F`
header; its key names moved between drivers ("Clocks Throttle Reasons" became "Clocks Event
Reasons" in 535, ECC counters went from "Single/Double Bit" to "SRAM/DRAM (Un)correctable"),
so every fact is looked up by the names each generation printed, and a fact no line gave stays
None ("not reported"), never 0. One pass, linear in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudash.probe.kernel_log import bus_key
from gpudash.text import clean_line, strip_escapes

_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_KV = re.compile(r"^(\s*)([^:]{1,80}?)\s*(?::\s?(.*))?$")
_INT = re.compile(r"^\s*(\d{1,12})(?![\d.])")
_REASON_BLOCKS = ("Clocks Event Reasons", "Clocks Throttle Reasons")
_NOT_REASONS = ("Clocks Event Reasons Counters",)
# Block names a pasted excerpt may start with, flush left (`nvidia-smi -q | grep -A 4 Fabric`).
_BLOCKS = frozenset(
    ("Fabric", "Remapped Rows", "Retired Pages", "ECC Errors", "ECC Mode", "PCI",
     "Utilization", *_REASON_BLOCKS)
)  # fmt: skip

# Clock event reasons that mean the GPU is being slowed by hardware or heat (NVML
# nvmlClocksEventReasons, https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html):
# HwSlowdown 0x8, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80.
# Idle, Applications Clocks Setting, SW Power Cap, Sync Boost and Display Clock Setting are
# normal operation and are not findings.
SLOWDOWN_REASONS = (
    "HW Slowdown",
    "HW Thermal Slowdown",
    "HW Power Brake Slowdown",
    "SW Thermal Slowdown",
)


@dataclass(frozen=True)
class GpuHealth:
    bus_id: str  # as nvidia-smi printed it
    name: str | None = None
    reasons: tuple[str, ...] = ()  # active clock event (throttle) reasons, as printed
    reasons_read: bool = False
    util_percent: int | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    ecc_mode: str | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    ecc_corrected_volatile: int | None = None
    ecc_corrected_aggregate: int | None = None
    sram_threshold_exceeded: bool | None = None
    retired_sbe: int | None = None
    retired_dbe: int | None = None
    retired_pending: bool | None = None
    remap_correctable: int | None = None
    remap_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    repair_pending: tuple[str, ...] = ()  # "Channel Repair Pending: Yes" etc. (Blackwell)
    unrepairable_memory: bool | None = None
    recovery_action: str | None = None  # "GPU Recovery Action" (None = not reported)
    fabric_state: str | None = None  # "Fabric / State": "Completed", "In Progress", ...
    fabric_status: str | None = None  # "Fabric / Status": "Success", "Insufficient Resources"

    @property
    def key(self) -> str | None:
        return bus_key(self.bus_id)


@dataclass(frozen=True)
class SmiReport:
    driver_version: str | None = None
    attached: int | None = None
    gpus: tuple[GpuHealth, ...] = ()
    unreachable: tuple[str, ...] = ()  # bus keys nvidia-smi could not get a handle for


_UNREACHABLE = re.compile(
    r"Unable to determine the device handle for (?:GPU)?\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f:.]+)"
)


def parse_smi_q(text: str) -> SmiReport:
    driver = attached = None
    gpus: list[GpuHealth] = []
    unreachable: dict[str, None] = {}
    current: dict[tuple[str, ...], str] | None = None
    bus = ""
    stack: list[tuple[int, str]] = []
    for raw in strip_escapes(text).split("\n"):
        line = raw.rstrip("\r")[:400]
        if m := _UNREACHABLE.search(line):
            if key := bus_key(m.group(1)):
                unreachable[key] = None
            continue
        if m := _GPU.match(line.strip()) if not line[:1].isspace() else None:
            if current is not None:
                gpus.append(_gpu(bus, current))
            bus, current, stack = clean_line(m.group(1)), {}, []
            continue
        m = _KV.match(line)
        if not m or not m.group(2).strip():
            continue
        indent, key, value = len(m.group(1).expandtabs()), m.group(2).strip(), m.group(3)
        if current is None and not gpus and (indent > 0 or (value is None and key in _BLOCKS)):
            # A pasted excerpt of one GPU's block, without its "GPU ..." header (indented as
            # in the report, or its first block name flush left, as a grep prints it).
            bus, current, stack = "", {}, []
        if current is None:
            if value is not None and key == "Driver Version":
                driver = clean_line(value.strip()) or None
            elif value is not None and key == "Attached GPUs":
                n = _INT.match(value)
                attached = int(n.group(1)) if n else None
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*(k for _, k in stack), key)
        if value is None or value.strip() == "":
            stack.append((indent, key))
        else:
            current[path] = value.strip()
    if current is not None:
        gpus.append(_gpu(bus, current))
    return SmiReport(driver, attached, tuple(gpus), tuple(unreachable))


def _gpu(bus: str, kv: dict[tuple[str, ...], str]) -> GpuHealth:
    reasons, read = [], False
    ecc: dict[str, int | None] = {"uv": None, "ua": None, "cv": None, "ca": None}
    retired: dict[str, int | bool | None] = {"sbe": None, "dbe": None, "pending": None}
    repair: list[str] = []
    for path, value in kv.items():
        top = path[0]
        if top in _REASON_BLOCKS and top not in _NOT_REASONS and len(path) >= 2:
            read = True
            if value.strip().lower() == "active":
                reasons.append(clean_line(path[-1]))
        elif top == "ECC Errors" and len(path) >= 3 and path[1] in ("Volatile", "Aggregate"):
            _ecc(ecc, path, value)
        elif top == "ECC Errors" and path[-1].endswith("Repair Pending") and _yes(value):
            repair.append(clean_line(path[-1]))
        elif top == "Retired Pages":
            _retired(retired, path, value)
    return GpuHealth(
        bus_id=bus,
        name=_text(kv.get(("Product Name",))),
        reasons=tuple(reasons),
        reasons_read=read,
        util_percent=_int(kv.get(("Utilization", "GPU"))),
        pcie_gen=_int(kv.get(("PCI", "GPU Link Info", "PCIe Generation", "Current"))),
        pcie_gen_max=_int(kv.get(("PCI", "GPU Link Info", "PCIe Generation", "Max"))),
        pcie_width=_int(kv.get(("PCI", "GPU Link Info", "Link Width", "Current"))),
        pcie_width_max=_int(kv.get(("PCI", "GPU Link Info", "Link Width", "Max"))),
        ecc_mode=_text(kv.get(("ECC Mode", "Current"))),
        ecc_uncorrected_volatile=ecc["uv"],
        ecc_uncorrected_aggregate=ecc["ua"],
        ecc_corrected_volatile=ecc["cv"],
        ecc_corrected_aggregate=ecc["ca"],
        sram_threshold_exceeded=_flag(
            kv.get(("ECC Errors", "Aggregate", "SRAM Threshold Exceeded"))
        ),
        retired_sbe=retired["sbe"],
        retired_dbe=retired["dbe"],
        retired_pending=retired["pending"],  # type: ignore[arg-type]  # its one flag
        remap_correctable=_int(kv.get(("Remapped Rows", "Correctable Error"))),
        remap_uncorrectable=_int(kv.get(("Remapped Rows", "Uncorrectable Error"))),
        remap_pending=_flag(kv.get(("Remapped Rows", "Pending"))),
        remap_failure=_flag(kv.get(("Remapped Rows", "Remapping Failure Occurred"))),
        repair_pending=tuple(repair),
        unrepairable_memory=_flag(kv.get(("ECC Errors", "Unrepairable Memory"))),
        recovery_action=_text(kv.get(("GPU Recovery Action",))),
        fabric_state=_text(kv.get(("Fabric", "State"))),
        fabric_status=_text(kv.get(("Fabric", "Status"))),
    )


def _ecc(acc: dict[str, int | None], path: tuple[str, ...], value: str) -> None:
    """Sum the uncorrectable / correctable counters of one ECC scope, across the names of
    every driver generation: "DRAM Uncorrectable", "SRAM Uncorrectable SEC-DED", or the old
    "Double Bit / Total" (only the Total leaf, not its per-unit parts)."""
    n = _int(value)
    if n is None:
        return
    words = " ".join(path[2:]).lower()
    if "single bit" in words or "double bit" in words:
        if path[-1] != "Total":
            return
        uncorrected = "double bit" in words
    elif "uncorrectable" in words:
        uncorrected = True
    elif "correctable" in words:
        uncorrected = False
    else:
        return
    slot = ("u" if uncorrected else "c") + ("v" if path[1] == "Volatile" else "a")
    acc[slot] = (acc[slot] or 0) + n


def _retired(acc: dict[str, int | bool | None], path: tuple[str, ...], value: str) -> None:
    words = " ".join(path[1:]).lower()
    if "pending" in words:
        acc["pending"] = _flag(value)
        return
    n = _int(value)
    if n is None:
        return
    slot = "sbe" if "single bit" in words else "dbe" if "double bit" in words else None
    if slot:
        acc[slot] = n


def _int(value: str | None) -> int | None:
    m = _INT.match(value) if value else None
    return int(m.group(1)) if m else None


def _flag(value: str | None) -> bool | None:
    v = (value or "").strip().lower()
    return True if v == "yes" else False if v == "no" else None


def _text(value: str | None) -> str | None:
    v = clean_line(value or "").strip()
    return None if not v or v == "N/A" else v[:120]


def _yes(value: str) -> bool:
    return _flag(value) is True
