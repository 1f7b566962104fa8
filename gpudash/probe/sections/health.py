"""The health section: what a freshly provisioned GPU machine can be broken by that no version
check sees. Xids in the kernel log, clock slowdowns, PCIe links trained down, ECC and row-remap
state, GPUs that fell off the bus, the NVSwitch fabric manager, RDMA ports, /dev/shm, memlock.

One section of the one script, so one round trip. Host processes are few: one `nvidia-smi -q`
(every per-GPU fact at once), one `dmesg` (or `journalctl -k` when dmesg is restricted) whose
NVRM lines awk keeps (the last 400), one `df`; PCI devices, RDMA ports and running daemons are
read from sysfs and /proc with shell builtins; `systemctl`/`nv-fabricmanager` run only where
an NVSwitch is on the bus. Nothing needs root: an unreadable kernel log is reported as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudash.probe.parts import Part, text_of
from gpudash.text import clean_line, is_uint

if TYPE_CHECKING:
    from gpudash.probe.hostfacts import FabricManager, PciDevice, RdmaPort
    from gpudash.probe.kernel_log import XidEvent
    from gpudash.probe.smiq import GpuHealth

# Parsers load with the first parse, not with the section: the probe script needs only
# BODY, so the host starts before they load (host_probe.warm_parsers; issue 33 item 10).

NAME = "health"
TIMEOUT = 15.0
KLOG_KEEP = 400  # NVRM lines kept from the end of the kernel log
JOURNAL_LINES = 20000  # kernel lines journalctl reads (from the end of this boot)

BODY = rf"""
gd_kfilter() {{
  awk -v max={KLOG_KEEP} '
/^@rc [0-9]+$/ {{ rc = $2; next }}
/NVRM|^dmesg: |^journalctl: |nsufficient permissions|^Hint: |No journal files/ {{
  b[n++ % max] = substr($0, 1, 500) }}
END {{ s = (n > max) ? n - max : 0
  for (i = s; i < n; i++) print b[i % max]
  print "@end " (rc == "" ? "?" : rc) " " (NR - 1) " " (n + 0) }}'
}}
gd_klog() {{
  have awk || {{ echo "awk: not found"; return 127; }}
  if have dmesg; then
    _k=$({{ dmesg 2>&1; echo "@rc $?"; }} | gd_kfilter)
    printf '@try dmesg\n%s\n' "$_k"
    case $_k in *"@end 0 "*) return 0 ;; esac
  fi
  have journalctl || return 0
  printf '@try journalctl\n'
  {{ journalctl -k -b -q --no-pager -n {JOURNAL_LINES} 2>&1; echo "@rc $?"; }} | gd_kfilter
}}
gd_smiq() {{ need nvidia-smi || return; nvidia-smi -q; }}
# NVIDIA PCI functions (vendor 0x10de) from sysfs: address, class, bound driver. Virtual
# functions (SR-IOV) are skipped: they are not GPUs nvidia-smi lists on this host. Where sysfs
# shows none (no /sys/bus/pci, or a sandbox's sysfs without the devices) `lspci` is asked, so
# a host with NVIDIA functions on its bus pays no extra process.
gd_lspci() {{
  _l=$(lspci -D -d 10de: 2>&1) || {{ printf '%s\n' "$_l"; return 1; }}
  printf '%s\n' "$_l"
  case $_l in *Bridge*) gd_switches=1 ;; esac
  return 0
}}
gd_pci() {{
  if [ ! -d /sys/bus/pci/devices ]; then
    have lspci && {{ gd_lspci; return; }}
    echo "no /sys/bus/pci and no lspci"; return 1
  fi
  _n=0
  for _d in /sys/bus/pci/devices/*; do
    [ -r "$_d/vendor" ] || continue
    read -r _v <"$_d/vendor" || continue
    [ "$_v" = 0x10de ] || continue
    [ -e "$_d/physfn" ] && continue
    read -r _c <"$_d/class" || _c=?
    _b=${{_d##*/}}; _drv=
    for _n in nvidia vfio-pci nouveau nvidia-nvswitch; do
      [ -e "/sys/bus/pci/drivers/$_n/$_b" ] && {{ _drv=$_n; break; }}
    done
    printf '%s %s %s\n' "$_b" "$_c" "$_drv"; _n=1
    case $_c in 0x0680*) gd_switches=1 ;; esac
  done
  [ "$_n" = 0 ] && have lspci && {{ gd_lspci; return; }}
  return 0
}}
# Running daemons by name, from /proc/*/comm (15 characters at most).
gd_procs() {{
  for _f in /proc/[0-9]*/comm; do
    read -r _c <"$_f" 2>/dev/null || continue
    case $_c in nv-fabricmanage*|nvidia-persiste*) printf '%s\n' "$_c" ;; esac
  done
  return 0
}}
gd_fm() {{
  [ -n "${{gd_switches:-}}" ] || {{ echo "no NVSwitch"; return 0; }}
  have systemctl && systemctl status nvidia-fabricmanager --no-pager -l -n 5 2>&1
  return 0
}}
gd_fmver() {{
  [ -n "${{gd_switches:-}}" ] || return 0
  have nv-fabricmanager && nv-fabricmanager --version 2>&1
  return 0
}}
gd_rdma() {{
  _any=
  for _p in /sys/class/infiniband/*/ports/*; do
    [ -d "$_p" ] || continue
    _dev=${{_p%/ports/*}}; _dev=${{_dev##*/}}; _s=; _ph=; _r=; _l=
    read -r _s <"$_p/state" 2>/dev/null; read -r _ph <"$_p/phys_state" 2>/dev/null
    read -r _r <"$_p/rate" 2>/dev/null; read -r _l <"$_p/link_layer" 2>/dev/null
    printf '%s %s|%s|%s|%s|%s\n' "$_dev" "${{_p##*/}}" "$_s" "$_ph" "$_r" "$_l"; _any=1
  done
  [ -n "$_any" ] || {{ have ibstat && ibstat 2>&1; }}
  return 0
}}
gd_shm() {{ df -Pk /dev/shm 2>&1; }}
gd_memlock() {{ ulimit -l; }}
part pci gd_pci
part klog gd_klog
part smiq gd_smiq
part procs gd_procs
part fm gd_fm
part fmver gd_fmver
part rdma gd_rdma
part shm gd_shm
part memlock gd_memlock
"""


@dataclass(frozen=True)
class KernelLog:
    source: str | None  # "dmesg", "journalctl", or None when neither was readable
    why_unreadable: str | None = None  # "dmesg: read kernel buffer failed: ..." etc.
    lines_read: int | None = None
    xids: tuple[XidEvent, ...] = ()
    fallen_off: tuple[str, ...] = ()
    truncated: bool = False  # more NVRM lines than the probe kept


@dataclass(frozen=True)
class Health:
    missing: str | None = None  # "nvidia-smi: not found" (the per-GPU facts are unknown)
    driver_version: str | None = None
    gpus: tuple[GpuHealth, ...] = ()
    unreachable: tuple[str, ...] = ()  # bus keys nvidia-smi printed it could not reach
    kernel: KernelLog = KernelLog(None)
    pci: tuple[PciDevice, ...] | None = None  # None: the bus could not be read
    fabric_manager: FabricManager | None = None  # None: no NVSwitch on the bus
    daemons: tuple[str, ...] | None = None  # running nv-fabricmanager / nvidia-persistenced
    rdma: tuple[RdmaPort, ...] = ()
    shm_kib: int | None = None
    memlock_unlimited: bool = False
    memlock_kib: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def pci_gpus(self) -> tuple[PciDevice, ...]:
        from gpudash.probe.hostfacts import GPU_CLASSES

        return tuple(d for d in self.pci or () if d.pci_class in GPU_CLASSES)

    @property
    def nvswitches(self) -> int | None:
        from gpudash.probe.hostfacts import SWITCH_CLASS

        return None if self.pci is None else sum(d.pci_class == SWITCH_CLASS for d in self.pci)

    @property
    def lost_gpus(self) -> tuple[str, ...]:
        """GPUs on the PCI bus that nvidia-smi does not list (bus keys); () when either side
        is unknown. A GPU bound to vfio-pci (passed through to a VM) is not lost."""
        if self.pci is None or self.missing or (not self.gpus and not self.unreachable):
            return ()
        seen = {g.key for g in self.gpus}
        return tuple(d.bus for d in self.pci_gpus if d.bus not in seen and d.driver != "vfio-pci")

    @property
    def persistenced(self) -> bool | None:
        if self.daemons is None:
            return None
        return any(d.startswith("nvidia-persiste") for d in self.daemons)


def parse(parts: Mapping[str, Part]) -> Health:
    from gpudash.probe.hostfacts import (
        parse_fabric_manager,
        parse_memlock,
        parse_pci,
        parse_rdma,
        parse_shm_kib,
    )
    from gpudash.probe.smiq import parse_smi_q

    notes: list[str] = []
    smi_text = text_of(parts, "smiq")
    missing = None
    if smi_text.strip().endswith("nvidia-smi: not found"):
        missing = "nvidia-smi: not found"
    report = parse_smi_q(smi_text) if not missing else None
    pci_part = parts.get("pci")
    pci = parse_pci(pci_part.text) if pci_part is not None and pci_part.ok else None
    if pci_part is not None and not pci_part.ok:
        notes.append(f"PCI bus not read: {clean_line(pci_part.text.strip()[:120])}")
    fm = None
    fm_text = text_of(parts, "fm")
    if "fm" in parts and fm_text.strip() != "no NVSwitch":
        fm = parse_fabric_manager(fm_text, text_of(parts, "fmver"))
    procs = parts.get("procs")
    daemons = (
        tuple(clean_line(x.strip())[:32] for x in procs.text.split("\n") if x.strip())
        if procs is not None and procs.ok
        else None
    )
    unlimited, memlock = parse_memlock(text_of(parts, "memlock"))
    return Health(
        missing=missing,
        driver_version=report.driver_version if report else None,
        gpus=report.gpus if report else (),
        unreachable=report.unreachable if report else (),
        kernel=parse_klog(text_of(parts, "klog")),
        pci=pci,
        fabric_manager=fm,
        daemons=daemons,
        rdma=parse_rdma(text_of(parts, "rdma")),
        shm_kib=parse_shm_kib(text_of(parts, "shm")),
        memlock_unlimited=unlimited,
        memlock_kib=memlock,
        notes=tuple(notes),
    )


def parse_klog(text: str) -> KernelLog:
    """The klog part: `@try SOURCE`, its kept lines, `@end RC LINES NVRM`, per source tried.
    The first source that read (rc 0, no permission hint) wins; NVRM lines of that source are
    parsed. A raw log with no markers (a pasted dmesg) is parsed as it is."""
    from gpudash.probe.kernel_log import parse_kernel_log

    if "@try " not in text:
        events = parse_kernel_log(text)
        return KernelLog("pasted", None, None, events.xids, events.fallen_off)
    blocks: list[tuple[str, list[str], list[str]]] = []
    for line in text.split("\n"):
        if line.startswith("@try "):
            blocks.append((line[5:].strip()[:20], [], []))
        elif blocks and line.startswith("@end "):
            blocks[-1][2].extend(line.split()[1:4])
        elif blocks:
            blocks[-1][1].append(line)
    whys: list[str] = []
    for source, lines, end in blocks:
        rc = end[0] if end else None
        denied = [x for x in lines if _denied(x)]
        if rc == "0" and not denied and (source == "dmesg" or _int(end, 1)):
            events = parse_kernel_log("\n".join(lines))
            return KernelLog(
                source,
                None,
                _int(end, 1),
                events.xids,
                events.fallen_off,
                truncated=(_int(end, 2) or 0) > KLOG_KEEP,
            )
        first = denied[0] if denied else (lines[0] if lines else f"{source} exited {rc}")
        if len(whys) < 3:  # two readers are tried; more @try lines are noise
            whys.append(clean_line(first.strip())[:160])
    if not blocks and text.strip():
        whys.append(clean_line(text.strip().split("\n")[0])[:160])
    return KernelLog(None, "; ".join(whys) or "no kernel log reader (dmesg, journalctl)")


def _denied(line: str) -> bool:
    low = line.lower()
    return (
        line.startswith(("dmesg: ", "journalctl: ", "Hint: "))
        or "insufficient permissions" in low
        or "no journal files" in low
    )


def _int(values: list[str], i: int) -> int | None:
    return int(values[i]) if len(values) > i and is_uint(values[i]) else None


def summary(data: Health) -> str:
    """The one line `gpudash probe` prints for this section: what looks wrong, else what was
    looked at (a count is never "ok" on its own: the checks give the verdict)."""
    from gpudash.probe.smiq import SLOWDOWN_REASONS

    bits: list[str] = []
    if data.missing:
        bits.append(data.missing)
    elif data.gpus:
        bits.append(f"{len(data.gpus)} GPU(s) read")
    slow = sum(any(r in SLOWDOWN_REASONS for r in g.reasons) for g in data.gpus)
    if slow:
        bits.append(f"{slow} slowed")
    lost = sorted(set(data.lost_gpus) | set(data.unreachable))
    if lost:
        bits.append(f"{len(lost)} lost ({', '.join(lost[:3])})")
    k = data.kernel
    if k.source is None:
        bits.append("kernel log unreadable")
    else:
        xids = sorted({e.xid for e in k.xids})
        bits.append(f"Xid {','.join(map(str, xids[:6]))}" if xids else f"no Xid ({k.source})")
        if k.fallen_off:
            bits.append(f"fallen off the bus: {', '.join(k.fallen_off[:3])}")
    fm = data.fabric_manager
    if fm is not None:
        bits.append(f"fabric manager {fm.active or '?'}")
    down = sum(p.state != "ACTIVE" for p in data.rdma)
    if data.rdma:
        bits.append(f"RDMA {len(data.rdma) - down}/{len(data.rdma)} up")
    return " · ".join(bits) or "nothing read"
