"""NVRM lines of a kernel log (`dmesg` or `journalctl -k`) -> Xid events and lost GPUs.

The probe filters the log on the host (only lines naming NVRM, the last 400 of them, each cut
to 500 characters), so what arrives is small; this parser reads any text anyway, in one pass.
Xid lines come in three shapes seen in public reports:

    [ 179.437933] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000005 intr 00008000
    May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.
    NVRM: Xid (0000:01:00): 31, Ch 0000000b, engmask 00000120, intr 10000000   (older drivers)

A GPU can also fall off the bus without an Xid (at probe time), in a message split over lines:
"NVRM: The NVIDIA GPU 0000:b3:00.0 / NVRM: (PCI ID: ...) installed in this system has /
NVRM: fallen off the bus and is not responding to commands."
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudash.text import clean_line

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?\):"
    r"\s*(\d{1,5})\b,?\s*(.{0,400})"
)
_PID = re.compile(r"\bpid=(\d{1,10})\b")
_NAME = re.compile(r"\bname=([^,\s]{1,64})")
_BUS = re.compile(r"(?:PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?")
_OFF_BUS = re.compile(r"fallen off\s+(?:of\s+)?the bus", re.IGNORECASE)
_GPU_AT = re.compile(r"NVRM: (?:The NVIDIA GPU|GPU at|GPU)\s+(?:PCI:)?([0-9A-Fa-f:.]{7,20})")


@dataclass(frozen=True)
class XidEvent:
    xid: int
    bus: str | None  # normalised "dddd:bb:dd" (domain:bus:device), see `bus_key`
    when: str  # what preceded "NVRM:" on the line (a timestamp), as printed
    pid: int | None
    process: str | None
    text: str  # the message after the Xid number


@dataclass(frozen=True)
class KernelEvents:
    xids: tuple[XidEvent, ...] = ()
    fallen_off: tuple[str, ...] = ()  # bus keys named in "fallen off the bus" messages


def bus_key(bus: str | None) -> str | None:
    """One spelling for a PCI address, whatever printed it: nvidia-smi's 00000000:18:00.0,
    sysfs's 0000:18:00.0, the Xid's PCI:0000:18:00 all become "0000:18:00"."""
    if not bus:
        return None
    m = _BUS.search(bus.strip())
    if not m:
        return None
    domain, b, d = m.group(1).lower().split(":")
    return f"{int(domain, 16):04x}:{b}:{d}"


def parse_kernel_log(text: str) -> KernelEvents:
    xids: list[XidEvent] = []
    fallen: dict[str, None] = {}
    pending_gpu: str | None = None
    pending_left = 0
    for raw in text.split("\n"):
        line = raw[:2000]
        if "NVRM" not in line:
            pending_left = 0
            continue
        if m := _XID.search(line):
            rest = m.group(3).strip()
            pid = _PID.search(rest)
            name = _NAME.search(rest)
            xids.append(
                XidEvent(
                    xid=int(m.group(2)),
                    bus=bus_key(m.group(1)),
                    when=clean_line(line[: line.find("NVRM:")].strip())[:60],
                    pid=int(pid.group(1)) if pid else None,
                    process=_process(name.group(1) if name else None),
                    text=clean_line(rest)[:300],
                )
            )
            continue
        gpu = _GPU_AT.search(line)
        if _OFF_BUS.search(line):
            key = bus_key(gpu.group(1)) if gpu else pending_gpu if pending_left else None
            if key:
                fallen[key] = None
            pending_left = 0
        elif gpu:
            pending_gpu, pending_left = bus_key(gpu.group(1)), 3
        elif pending_left:
            pending_left -= 1
    return KernelEvents(tuple(xids), tuple(fallen))


def _process(name: str | None) -> str | None:
    value = clean_line(name or "").strip("'\"")
    return None if not value or value == "<unknown>" else value
