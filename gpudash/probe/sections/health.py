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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudash.probe.kernel_log import (
    LOW_XIDS,
    MAX_KEYS,
    MAX_LOW_KEYS,
    XidEvent,
    parse_kernel_log,
)
from gpudash.probe.markdown import md, md_table, yes
from gpudash.probe.parts import Part, text_of
from gpudash.text import clean_line, is_uint

if TYPE_CHECKING:
    from gpudash.probe.hostfacts import FabricManager, PciDevice, RdmaPort
    from gpudash.probe.smiq import GpuHealth

# Parsers load with the first parse, not with the section: the probe script needs only
# BODY (and kernel_log's Xid sets, which it prints), so the host starts before they load
# (host_probe.warm_parsers; issue 33 item 10).

NAME = "health"
TIMEOUT = 15.0
KLOG_KEEP = 400  # NVRM lines the probe kept before Xids were kept per GPU (old captures)
KLOG_CONTEXT = 50  # other NVRM lines kept from the end of the kernel log
LOW = " ".join(map(str, sorted(LOW_XIDS)))
JOURNAL_LINES = 20000  # kernel lines journalctl reads (from the end of this boot)

BODY = rf"""
# The kernel log's NVRM lines, bounded however long the log (probe/kernel_log.py says why):
# per (GPU, Xid, fatal or not) the first and the last line and a count, in two pools (the
# catalog's application faults apart), the last {KLOG_CONTEXT} other NVRM lines, and the lines
# around each "fallen off the bus". Then `@end RC LINES NVRM DROPPED`.
gd_kfilter() {{
  awk -v max={MAX_KEYS} -v lowmax={MAX_LOW_KEYS} -v ctx={KLOG_CONTEXT} -v low=" {LOW} " '
/^@rc [0-9]+$/ {{ rc = $2; next }}
/^dmesg: |^journalctl: |nsufficient permissions|^Hint: |No journal files/ {{
  if (nd < 5) den[++nd] = substr($0, 1, 500); next }}
!/NVRM/ {{ next }}
{{ nv++; line = substr($0, 1, 500) }}
match(line, /NVRM: Xid \([^)]*\): *[0-9]+/) {{
  s = substr(line, RSTART, RLENGTH); code = s; sub(/.*\): */, "", code)
  bus = s; sub(/^NVRM: Xid \(/, "", bus); sub(/\).*/, "", bus); sub(/^PCI:/, "", bus)
  lc = tolower(line); f = ""
  nf = (lc ~ /(^|[^a-z0-9_])non-?fatal([^a-z0-9_]|$)/)
  if (!nf && lc ~ /(^|[^a-z0-9_])fatal([^a-z0-9_]|$)/) f = " F"
  k = tolower(bus) " " (code + 0) f
  if (!(k in cnt)) {{
    if (index(low, " " (code + 0) " ")) {{ if (nl >= lowmax) {{ drop++; next }}; nl++ }}
    else {{ if (nh >= max) {{ drop++; next }}; nh++ }}
    ko[++nk] = k; first[k] = line
  }} else last[k] = line
  cnt[k]++; next
}}
{{ r[nr++ % ctx] = line
  if (line ~ /[Ff]allen off/ && np < 32) {{ pin[++np] = p3; pin[++np] = p2; pin[++np] = p1
    pin[++np] = line }}
  p3 = p2; p2 = p1; p1 = line }}
END {{
  for (i = 1; i <= nd; i++) print den[i]
  for (i = (nr > ctx ? nr - ctx : 0); i < nr; i++) print r[i % ctx]
  for (i = 1; i <= np; i++) if (pin[i] != "") print pin[i]
  for (i = 1; i <= nk; i++) {{ k = ko[i]; print first[k]
    if (cnt[k] > 1) {{ print "@rep " (cnt[k] - 1); print last[k] }} }}
  print "@end " (rc == "" ? "?" : rc) " " (NR - 1) " " (nv + 0) " " (drop + 0) }}'
}}
gd_klog() {{
  have awk || {{ echo "@none awk: not found (the kernel log is filtered with awk)"; return 0; }}
  _any=
  if have dmesg; then
    _any=1
    _k=$({{ dmesg 2>&1; echo "@rc $?"; }} | gd_kfilter)
    printf '@try dmesg\n%s\n' "$_k"
    case $_k in *"@end 0 "*) return 0 ;; esac
  fi
  if have journalctl; then
    printf '@try journalctl\n'
    {{ journalctl -k -b -q --no-pager -n {JOURNAL_LINES} 2>&1; echo "@rc $?"; }} | gd_kfilter
    return 0
  fi
  [ -n "$_any" ] || echo "@none neither dmesg nor journalctl is on PATH"
  return 0
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
  have systemctl || {{ echo "@no-systemctl"; return 0; }}
  systemctl status nvidia-fabricmanager --no-pager -l -n 5 2>&1
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
    _dev=${{_p%/ports/*}}; _dev=${{_dev##*/}}; _s=; _ph=; _r=; _l=; _t=
    read -r _s <"$_p/state" 2>/dev/null; read -r _ph <"$_p/phys_state" 2>/dev/null
    read -r _r <"$_p/rate" 2>/dev/null; read -r _l <"$_p/link_layer" 2>/dev/null
    read -r _t <"/sys/class/infiniband/$_dev/hca_type" 2>/dev/null
    printf '%s %s|%s|%s|%s|%s|%s\n' "$_dev" "${{_p##*/}}" "$_s" "$_ph" "$_r" "$_l" "$_t"
    _any=1
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
    truncated: bool = False  # Xids the probe could not keep (see `dropped`)
    dropped: int = 0  # Xid lines whose (GPU, Xid) found no room in the bounded tables


@dataclass(frozen=True)
class Health:
    missing: str | None = None  # "nvidia-smi: not found" (the per-GPU facts are unknown)
    driver_version: str | None = None
    gpus: tuple[GpuHealth, ...] = ()
    unreachable: tuple[str, ...] = ()  # bus keys nvidia-smi printed it could not reach
    kernel: KernelLog = KernelLog(None)
    pci: tuple[PciDevice, ...] | None = None  # None: the bus could not be read
    pci_why: str | None = None  # why not ("no /sys/bus/pci and no lspci", lspci's error)
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
    pci_why = None
    if pci_part is None:
        pci_why = "the probe did not read it"
    elif not pci_part.ok:
        pci_why = clean_line(pci_part.text.strip()[:120]) or f"exit status {pci_part.rc}"
        notes.append(f"PCI bus not read: {pci_why}")
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
        pci_why=pci_why,
        fabric_manager=fm,
        daemons=daemons,
        rdma=parse_rdma(text_of(parts, "rdma")),
        shm_kib=parse_shm_kib(text_of(parts, "shm")),
        memlock_unlimited=unlimited,
        memlock_kib=memlock,
        notes=tuple(notes),
    )


_TRY = re.compile(r"^@try (dmesg|journalctl)$")
_END = re.compile(r"^@end (\S{1,4}) (\d{1,12}) (\d{1,12})(?: (\d{1,12}))?$")


def parse_klog(text: str) -> KernelLog:
    """The klog part: `@try SOURCE`, its kept lines, `@end RC LINES NVRM DROPPED`, per source
    tried, or `@none REASON` when there was nothing to read it with. The first source that
    read (rc 0, no permission hint) wins. Text with no marker at all is a pasted log when it
    has NVRM lines; anything else is "not read", with the text's first line as the reason
    (an older probe printed "awk: not found" or nothing at all)."""
    blocks: list[tuple[str, list[str], tuple[str, ...]]] = []
    whys: list[str] = []
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if m := _TRY.match(line):
            blocks.append((m.group(1), [], ()))
        elif line.startswith("@none ") and not blocks:
            whys.append(clean_line(line[6:].strip())[:160])
        elif blocks and (m := _END.match(line)):
            blocks[-1] = (blocks[-1][0], blocks[-1][1], m.groups(default=""))
        elif blocks:
            blocks[-1][1].append(line)
    if not blocks and not whys:
        if "NVRM" in text:
            events = parse_kernel_log(text)
            return KernelLog(
                "pasted", None, None, events.xids, events.fallen_off, dropped=events.dropped
            )
        first = text.strip().split("\n")[0] if text.strip() else ""
        why = clean_line(first.strip())[:160] or "the probe printed nothing for the kernel log"
        return KernelLog(None, why)
    for source, lines, end in blocks:
        rc = end[0] if end else None
        denied = [x for x in lines if _denied(x)]
        if rc == "0" and not denied and (source == "dmesg" or _int(end, 1)):
            events = parse_kernel_log("\n".join(lines))
            dropped = max(events.dropped, _int(end, 3) or 0)
            old = len(end) > 3 and end[3] == ""  # a capture from before the per-GPU keeping
            return KernelLog(
                source,
                None,
                _int(end, 1),
                events.xids,
                events.fallen_off,
                truncated=dropped > 0 or (old and (_int(end, 2) or 0) > KLOG_KEEP),
                dropped=dropped,
            )
        first = denied[0] if denied else (lines[0] if lines else f"{source} exited {rc}")
        if len(whys) < 3:  # two readers are tried; more @try lines are noise
            whys.append(clean_line(first.strip())[:160])
    return KernelLog(None, "; ".join(whys) or "no kernel log reader (dmesg, journalctl)")


def _denied(line: str) -> bool:
    low = line.lower()
    return (
        line.startswith(("dmesg: ", "journalctl: ", "Hint: "))
        or "insufficient permissions" in low
        or "no journal files" in low
    )


def _int(values: Sequence[str], i: int) -> int | None:
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
        bits.append(f"kernel log not read ({(k.why_unreadable or '?')[:60]})")
    else:
        xids = sorted({e.xid for e in k.xids})
        bits.append(f"Xid {','.join(map(str, xids[:6]))}" if xids else f"no Xid ({k.source})")
        if k.fallen_off:
            bits.append(f"fallen off the bus: {', '.join(k.fallen_off[:3])}")
    waiting = [g for g in data.gpus if g.fabric_state not in (None, "Completed", "Not Supported")]
    if waiting:
        bits.append(f"fabric {waiting[0].fabric_state} on {len(waiting)}")
    fm = data.fabric_manager
    if fm is not None:
        bits.append(f"fabric manager {fm.active or '?'}")
    down = sum(p.state != "ACTIVE" for p in data.rdma)
    if data.rdma:
        bits.append(f"RDMA {len(data.rdma) - down}/{len(data.rdma)} up")
    return " · ".join(bits) or "nothing read"


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "Health"


def report(h: Health) -> list[str]:
    """What the health section read, per GPU and for the host (the verdicts are above)."""
    lines = []
    if h.gpus:
        rows = []
        for i, g in enumerate(h.gpus):
            link = f"gen{g.pcie_gen or '?'}/{g.pcie_gen_max or '?'} x{g.pcie_width or '?'}"
            link += f"/{g.pcie_width_max or '?'}"
            xids = sorted({e.xid for e in h.kernel.xids if e.bus == g.key})
            rows.append(
                (
                    i,
                    g.key or g.bus_id,
                    ", ".join(g.reasons) if g.reasons_read else "?",
                    link,
                    yes(g.remap_pending, "yes", "no") if g.remap_pending is not None else "?",
                    "?" if g.ecc_uncorrected_volatile is None else g.ecc_uncorrected_volatile,
                    ", ".join(map(str, xids)) or "none",
                )
            )
        lines += md_table(
            ["#", "Bus", "Clock reasons", "PCIe", "Remap pending", "Uncorr. ECC", "Xid"], rows
        )
        lines.append("")
    lines.append(md(summary(h)) + ".")
    return lines
