"""Parsers for the host-side facts of the health section: GPUs on the PCI bus, RDMA ports,
the fabric manager service, /dev/shm and the memlock limit. Pure, total, linear."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudash.probe.kernel_log import bus_key
from gpudash.text import clean_line, is_uint

# PCI class codes (PCI Code and ID Assignment Specification): 0x0300 VGA, 0x0302 3D controller
# (data-center GPUs), 0x0680 "other bridge" (NVIDIA's NVSwitch on HGX boards).
GPU_CLASSES = ("0x0300", "0x0302")
SWITCH_CLASS = "0x0680"
_SYSFS_PCI = re.compile(r"^(\S+)\s+(0x[0-9a-fA-F]{4,6})\s*(\S*)\s*$")
_LSPCI = re.compile(
    r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(3D controller|VGA compatible controller|Bridge)[^:]*:\s*NVIDIA",
)
_LSPCI_CLASS = {"3D controller": "0x0302", "VGA compatible controller": "0x0300",
                "Bridge": SWITCH_CLASS}  # fmt: skip


@dataclass(frozen=True)
class PciDevice:
    bus: str  # bus key "dddd:bb:dd"
    pci_class: str  # "0x0302"
    driver: str | None  # the kernel driver bound, where sysfs says


def parse_pci(text: str) -> tuple[PciDevice, ...]:
    """NVIDIA devices, from the probe's sysfs lines (`0000:18:00.0 0x030200 nvidia`) or from
    `lspci` (`16:00.0 3D controller: NVIDIA Corporation Device 26b9 (rev a1)`)."""
    out: dict[str, PciDevice] = {}
    for raw in text.split("\n"):
        line = raw.strip()[:300]
        if m := _SYSFS_PCI.match(line):
            key = bus_key(m.group(1))
            if key:
                driver = clean_line(m.group(3)) or None
                out[key] = PciDevice(key, m.group(2)[:6].lower(), driver)
        elif m := _LSPCI.match(line):
            key = bus_key(f"{m.group(1) or '0000'}:{m.group(2)}")
            if key:
                out[key] = PciDevice(key, _LSPCI_CLASS[m.group(3)], None)
    return tuple(out.values())


@dataclass(frozen=True)
class RdmaPort:
    device: str
    port: str
    state: str  # "ACTIVE", "DOWN", "INIT", ... (upper case)
    phys_state: str | None
    rate_gbps: float | None
    link_layer: str | None  # "InfiniBand" or "Ethernet" (RoCE)
    model: str | None = None  # the HCA's type ("MT4129" = ConnectX-7): ibstat's "CA type"


_SYSFS_IB = re.compile(r"^(\S+)\s+(\d+)\s*\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)(?:\|(.*))?$")
_STATE = re.compile(r"^\s*(?:\d+:\s*)?([A-Za-z_]+)")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)")
_CA = re.compile(r"^CA '([^']{1,64})'")
_CA_TYPE = re.compile(r"^\s+CA type:\s*(\S{1,32})")
_PORT = re.compile(r"^\s+Port (\d+):\s*$")
_IBKV = re.compile(r"^\s+(State|Physical state|Rate|Link layer):\s*(.*)$")
_IBSTATUS = re.compile(r"^Infiniband device '([^']{1,64})' port (\d+) status:")
_SLOT = {"state": "state", "physical state": "phys", "phys state": "phys", "rate": "rate",
         "link layer": "layer", "link_layer": "layer"}  # fmt: skip
_IBSTATUS_KV = re.compile(r"^\s+(state|phys state|rate|link_layer):\s*(.*)$")


def parse_rdma(text: str) -> tuple[RdmaPort, ...]:
    """Ports from the probe's sysfs lines (`mlx5_0 1|4: ACTIVE|5: LinkUp|400 Gb/sec (4X NDR)|
    InfiniBand`), from `ibstat`, or from `ibstatus` (which prints the sysfs values)."""
    ports: list[RdmaPort] = []
    cur: dict[str, str] = {}

    def flush() -> None:
        if cur.get("device") and cur.get("port"):
            ports.append(_port(cur))
        cur.clear()

    device = model = ""
    for raw in text.split("\n"):
        line = raw.rstrip()[:300]
        if m := _SYSFS_IB.match(line):
            flush()
            cur.update(device=m.group(1), port=m.group(2), state=m.group(3),
                       phys=m.group(4), rate=m.group(5), layer=m.group(6),
                       model=m.group(7) or "")  # fmt: skip
            flush()
        elif m := _CA.match(line):
            flush()
            device, model = m.group(1), ""
        elif (m := _CA_TYPE.match(line)) and not cur:
            model = m.group(1)
        elif m := _PORT.match(line):
            flush()
            cur.update(device=device, port=m.group(1), model=model)
        elif m := _IBSTATUS.match(line):
            flush()
            cur.update(device=m.group(1), port=m.group(2))
        elif (m := _IBKV.match(line) or _IBSTATUS_KV.match(line)) and cur:
            cur[_SLOT[m.group(1).lower()]] = m.group(2)
    flush()
    return tuple(ports)


def _port(cur: dict[str, str]) -> RdmaPort:
    state = _STATE.match(cur.get("state", ""))
    phys = cur.get("phys", "").strip()
    rate = _RATE.match(cur.get("rate", ""))
    layer = clean_line(cur.get("layer", "")).strip()
    return RdmaPort(
        device=clean_line(cur["device"])[:64],
        port=cur["port"][:8],
        state=state.group(1).upper() if state else "?",
        phys_state=clean_line(phys.split(":", 1)[-1].strip())[:32] or None,
        rate_gbps=float(rate.group(1)) if rate else None,
        link_layer=layer[:32] or None,
        model=clean_line(cur.get("model", "")).strip()[:32] or None,
    )


@dataclass(frozen=True)
class FabricManager:
    active: str | None  # systemd ActiveState: "active", "failed", "inactive" (None: unknown)
    sub: str | None  # "running", "dead", ...
    version: str | None  # fabric manager's own version
    driver_seen: str | None  # the driver version its log says it found
    log: tuple[str, ...] = ()  # the last journal lines systemctl showed
    unknown: str | None = None  # why the state is unknown ("no systemctl", "not booted ...")


_ACTIVE = re.compile(r"^\s*Active:\s*([a-z-]+)(?:\s*\(([^)]*)\))?")
_NO_SYSTEMD = ("not been booted with systemd", "Failed to connect to bus",
               "Failed to get D-Bus connection", "Host is down")  # fmt: skip
_FM_VERSION = re.compile(r"[Ff]abric [Mm]anager version is\s*:\s*([\w.-]{1,40})")
_MISMATCH = re.compile(
    r"interface version\s+([\w.-]{1,40})\s+\S{0,8}\s*(?:match|matches)?[^0-9]*?"
    r"driver version\s+([\w.-]{1,40})"
)


def parse_fabric_manager(status: str, version: str) -> FabricManager:
    """`systemctl status nvidia-fabricmanager` (and `nv-fabricmanager --version`). The state
    is known only from systemd's own words: "could not be found" is a service not installed,
    no systemctl or no systemd to ask (a container) is unknown, never "not running"."""
    active = sub = seen = fm_version = unknown = None
    log: list[str] = []
    for raw in status.split("\n"):
        line = raw.rstrip()[:400]
        if line.strip() == "@no-systemctl":
            unknown = "no systemctl on this host (a container?)"
        elif "could not be found" in line and "fabricmanager" in line:
            active = "not-found"
        elif any(k in line for k in _NO_SYSTEMD) and unknown is None:
            unknown = clean_line(line.strip())[:160]
        elif m := _ACTIVE.match(line):
            active, sub = m.group(1), (m.group(2) or None)
        elif m := _MISMATCH.search(line):
            fm_version, seen = m.group(1), m.group(2).rstrip(".")
        if "fabricmanager" in line or "fabric manager" in line.lower():
            log.append(clean_line(line.strip())[:200])
    if active is None and any("status=1/FAILURE" in x or "Failed with result" in x for x in log):
        active = "failed"
    if m := _FM_VERSION.search(version):
        fm_version = m.group(1)
    if active is None and unknown is None:
        unknown = "systemctl printed no state"
    return FabricManager(active, sub, fm_version, seen, tuple(log[-5:]), unknown)


def parse_shm_kib(df: str) -> int | None:
    """`df -Pk /dev/shm`: the size column of its one data row, in KiB."""
    for line in df.split("\n")[1:3]:
        fields = line.split()
        if len(fields) >= 6 and is_uint(fields[1]):
            return int(fields[1])
    return None


def parse_memlock(text: str) -> tuple[bool, int | None]:
    """`ulimit -l` -> (unlimited, KiB)."""
    value = text.strip().split("\n")[0].strip() if text.strip() else ""
    if value == "unlimited":
        return True, None
    return False, int(value) if is_uint(value) and len(value) < 19 else None
