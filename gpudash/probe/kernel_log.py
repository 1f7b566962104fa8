"""NVRM lines of a kernel log (`dmesg` or `journalctl -k`) -> Xid events and lost GPUs.

The Xid message is found wherever it sits on the line, so every prefix a kernel log reader
prints is read alike (each one in tests/unit/test_kernel_log.py, from real captures):

    [  179.437933] NVRM: Xid (PCI:0000:01:00): 32, ...                        dmesg (raw)
    [Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, ...          dmesg -T / --ctime
    2024-08-30T11:43:14,123456+00:00 NVRM: Xid (PCI:0000:cb:00): 109, ...    dmesg --time-format iso
    kern  :warn  : [ 179.4] NVRM: Xid ...                                       dmesg -x
    May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:2b:00): 79, ...           journalctl short
    2024-05-18T19:02:39+0000 host kernel: NVRM: ...                             short-iso
    May 18 19:02:39.123456 host kernel: NVRM: ...                               short-precise
    10.0.0.1: kern: warning: [2026-04-22T21:27:51Z]: NVRM: Xid ...             talosctl dmesg
    NVRM: Xid (0000:01:00): 31, Ch 0000000b, ...                                older drivers

A GPU can also fall off the bus without an Xid (at probe time), in a message split over lines:
"NVRM: The NVIDIA GPU 0000:b3:00.0 / NVRM: (PCI ID: ...) installed in this system has /
NVRM: fallen off the bus and is not responding to commands."

Bounded however long the log: Xids are kept per (GPU, Xid, fatal or not), as a count with
the first and the last message, so a burst of 500 Xid 13 is one entry and never pushes out
the Xid 43 after it. The number of such keys is capped, with a separate, smaller pool for the
Xids NVIDIA's catalog files as application faults (`LOW_XIDS`), so a flood of those can never
take the room of a hardware Xid; what did not fit is counted (`dropped`), never silent. The
probe's awk filter (sections/health.py) applies the same rule on the host and marks each kept
last message with `@rep N` (the N occurrences it stands for beyond the first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gpudash.text import clean_line

# The catalog's application-fault and ignorable Xids (immediate action RESTART_APP, IGNORE,
# WORKFLOW_XID_45, CHECK_UVM or CONTACT_SUPPORT in checks/facts/xid.py, Xid 94 excepted):
# held equal to that table by tests/unit/test_kernel_log.py (the probe may not import checks).
LOW_XIDS = frozenset(
    (8, 11, 13, 14, 25, 31, 32, 37, 38, 39, 40, 41, 43, 44, 45, 60, 63, 66, 67, 68, 69, 70, 71,
     72, 75, 76, 77, 80, 82, 83, 84, 85, 86, 88, 89, 92, 93, 96, 97, 98, 99, 100, 101, 102, 103,
     104, 105, 106, 107, 121, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 137, 139, 141,
     142, 152, 153, 157, 159, 160, 161)
)  # fmt: skip
MAX_KEYS = 448  # (GPU, Xid) keys of hardware-class Xids kept
MAX_LOW_KEYS = 64  # keys of LOW_XIDS kept (their own pool)

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?\):"
    r"\s*(\d{1,5})\b,?\s*(.{0,400})"
)
_REP = re.compile(r"^@rep (\d{1,12})$")
_PID = re.compile(r"\bpid=(\d{1,10})\b")
_NAME = re.compile(r"\bname=([^,\s]{1,64})")
_BUS = re.compile(r"(?:PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-7])?")
_OFF_BUS = re.compile(r"fallen off\s+(?:of\s+)?the bus", re.IGNORECASE)
_GPU_AT = re.compile(r"NVRM: (?:The NVIDIA GPU|GPU at|GPU)\s+(?:PCI:)?([0-9A-Fa-f:.]{7,20})")
_NONFATAL = re.compile(r"\bnon-?fatal\b", re.IGNORECASE)
_FATAL = re.compile(r"\bfatal\b", re.IGNORECASE)


@dataclass(frozen=True)
class XidEvent:
    """One (GPU, Xid) of the log: its last message, and how many times it was logged."""

    xid: int
    bus: str | None  # normalised "dddd:bb:dd" (domain:bus:device), see `bus_key`
    when: str  # what preceded "NVRM:" on the last such line (a timestamp), as printed
    pid: int | None
    process: str | None
    text: str  # the last message after the Xid number
    count: int = 1
    first_when: str | None = None  # the first such line's timestamp, where count > 1


@dataclass(frozen=True)
class KernelEvents:
    xids: tuple[XidEvent, ...] = ()
    fallen_off: tuple[str, ...] = ()  # bus keys named in "fallen off the bus" messages
    dropped: int = 0  # Xid lines whose (GPU, Xid) found no room in the bounded tables


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


def fatal_variant(text: str) -> bool:
    """True when the message calls itself fatal ("NETIR Fatal"), not "Nonfatal": such Xids
    (144-150) are kept apart from their non-fatal kin, as the catalog judges them apart."""
    return bool(_FATAL.search(text)) and not _NONFATAL.search(text)


def parse_kernel_log(text: str) -> KernelEvents:
    """Xids (aggregated per GPU and Xid, bounded) and fallen-off GPUs of any kernel log text,
    in one pass; `@rep N` lines (the probe's) weigh the next Xid line N."""
    groups: dict[tuple[str | None, int, bool], XidEvent] = {}
    high = low = dropped = 0
    fallen: dict[str, None] = {}
    pending_gpu: str | None = None
    pending_left = 0
    weight = 1
    for raw in text.split("\n"):
        line = raw[:2000]
        if line.startswith("@rep ") and (r := _REP.match(line.rstrip("\r"))):
            weight = max(int(r.group(1)), 1)
            continue
        if "NVRM" not in line:
            pending_left = 0
            continue
        if m := _XID.search(line):
            n, weight = weight, 1
            event = _event(line, m)
            key = (event.bus, event.xid, fatal_variant(event.text))
            seen = groups.get(key)
            if seen is None:
                is_low = event.xid in LOW_XIDS
                if (low >= MAX_LOW_KEYS) if is_low else (high >= MAX_KEYS):
                    dropped += n
                    continue
                low, high = (low + 1, high) if is_low else (low, high + 1)
                groups[key] = replace(event, count=n)
            else:
                groups[key] = replace(
                    event, count=seen.count + n, first_when=seen.first_when or seen.when
                )
            continue
        gpu = _GPU_AT.search(line)
        if _OFF_BUS.search(line):
            key_bus = bus_key(gpu.group(1)) if gpu else pending_gpu if pending_left else None
            if key_bus:
                fallen[key_bus] = None
            pending_left = 0
        elif gpu:
            pending_gpu, pending_left = bus_key(gpu.group(1)), 3
        elif pending_left:
            pending_left -= 1
    return KernelEvents(tuple(groups.values()), tuple(fallen), dropped)


def _event(line: str, m: re.Match[str]) -> XidEvent:
    rest = m.group(3).strip()
    pid = _PID.search(rest)
    name = _NAME.search(rest)
    return XidEvent(
        xid=int(m.group(2)),
        bus=bus_key(m.group(1)),
        when=clean_line(line[: line.find("NVRM:")].strip())[:60],
        pid=int(pid.group(1)) if pid else None,
        process=_process(name.group(1) if name else None),
        text=clean_line(rest)[:300],
    )


def _process(name: str | None) -> str | None:
    value = clean_line(name or "").strip("'\"")
    return None if not value or value == "<unknown>" else value
