"""GPU health: Xids, clock slowdowns, PCIe links, memory errors, lost GPUs, the NVLink
fabric and its manager, RDMA ports, /dev/shm and memlock, from the health section. Pure
functions of its result (the memory, fabric and RDMA rules have modules of their own).

Every finding names the GPU (index and bus id, where the gpus section gives the index), says
why it matters for serving, gives the fix, and says in `facts["judged_from"]` what it was
judged from. A fact the probe could not read (a restricted kernel log, no PCI bus, no
nvidia-smi) is a finding saying so, never "ok"; `health.ok` names what it looked at and what
it could not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gpudash.checks.fabric import fabric_findings
from gpudash.checks.facts import xid as xid_facts
from gpudash.checks.finding import Finding, Severity
from gpudash.checks.gpu_memory import MEMORY_XIDS, memory_findings, state_read
from gpudash.checks.rdma import rdma_findings
from gpudash.probe.kernel_log import bus_key
from gpudash.probe.sections.health import Health
from gpudash.probe.smiq import SLOWDOWN_REASONS

if TYPE_CHECKING:
    from gpudash.checks.context import Context

BUSY_PERCENT = 20  # above this utilisation a PCIe generation below max is not the idle downtrain
SHM_MIN_KIB = 1024 * 1024  # 1 GiB: NCCL and engines' shared memory (Docker's default is 64 MiB)
_SEV = {"fail": Severity.FAIL, "warn": Severity.WARN, "info": Severity.INFO}


def check(ctx: Context) -> list[Finding]:
    health = ctx.section("health", Health)
    if health is None:
        return []
    system = ctx.system
    return check_health(
        health,
        ctx.gpu_list,
        uptime_s=getattr(system, "uptime_s", None),
        evidence=_evidence(ctx.section("verify")),
    )


def _evidence(verify: Any) -> list[str]:
    """The error texts the last verify run left (torch, per GPU, NCCL, engines): where a
    CUDA error 802 would show."""
    result = getattr(verify, "result", None)
    if result is None:
        return []
    parts = [
        getattr(result, "torch", None),
        getattr(result, "nccl", None),
        *(getattr(result, "gpus", None) or ()),
        *(getattr(result, "engines", None) or ()),
    ]
    errors = [e for p in parts if isinstance(e := getattr(p, "error", None), str)]
    return errors + [f for f in getattr(result, "failures", ()) if isinstance(f, str)]


def check_health(
    health: Any,
    gpu_list: Any = (),
    uptime_s: float | None = None,
    evidence: Iterable[str] = (),
) -> list[Finding]:
    index = {bus_key(getattr(g, "bus_id", None)): g.index for g in gpu_list or ()}
    for n, g in enumerate(health.gpus):  # nvidia-smi -q lists GPUs in index order
        index.setdefault(g.key, n)

    def who(key: str | None) -> str:
        i = index.get(key)
        return f"GPU {i} ({key})" if i is not None else f"GPU {key or '?'}"

    read = {g.key for g in health.gpus if state_read(g)}
    out: list[Finding] = []
    out += _kernel(health, who, read)
    out += _lost(health, who)
    for g in health.gpus:
        mem = [e for e in health.kernel.xids if e.xid in MEMORY_XIDS and e.bus == g.key]
        out += _gpu(g, who(g.key)) + memory_findings(g, who(g.key), mem if g.key in read else [])
    out += fabric_findings(health, who, uptime_s, list(evidence))
    out += _persistence(health, gpu_list)
    out += rdma_findings(list(health.rdma), health.memlock_unlimited, health.memlock_kib)
    out += _shm(health)
    if not any(f.severity.rank >= Severity.WARN.rank for f in out):
        out += _ok(health)
    return out


def _ok(health: Any) -> list[Finding]:
    seen = [f"{len(health.gpus)} GPU(s)"] if health.gpus else []
    if health.kernel.source:
        seen.append(f"kernel log ({health.kernel.source})")
    if _pci_ok(health):
        seen.append("the PCI bus")
    if not seen:
        return []
    gaps = (
        ("nvidia-smi -q", not health.gpus),
        ("kernel log", not health.kernel.source),
        ("PCI bus", not _pci_ok(health)),
    )
    unread = [name for name, gone in gaps if gone]
    return [
        Finding(
            Severity.OK,
            "health.ok",
            "GPU health: nothing wrong in "
            + ", ".join(seen)
            + (f" (not read: {', '.join(unread)})" if unread else ""),
            facts={"looked_at": seen, "not_read": unread, "judged_from": ", ".join(seen)},
        )
    ]


def _kernel(health: Any, who: Any, read: set[str | None]) -> list[Finding]:
    k = health.kernel
    if k.source is None:
        return [
            Finding(
                Severity.INFO,
                "health.kernel_log_unreadable",
                f"Kernel log not readable: {k.why_unreadable or 'no reader'}; Xid errors unknown",
                why="Xids are the driver's record of GPU faults since boot; without "
                "the log a GPU that faulted looks healthy.",
                fix="Run the probe as a user in the adm or systemd-journal group, or "
                "allow dmesg (sysctl kernel.dmesg_restrict=0); install util-linux (dmesg) "
                "and awk where they are missing.",
                facts={"why": k.why_unreadable, "judged_from": "the probe's klog part"},
            )
        ]
    out = []
    for e in k.xids:
        if e.xid in MEMORY_XIDS and e.bus in read:
            continue  # judged with the GPU's memory state (gpu_memory)
        out.append(_xid(e, who, k.source))
    if k.truncated:
        out.append(
            Finding(
                Severity.WARN,
                "health.kernel_log_truncated",
                f"Kernel log: {k.dropped or 'some'} Xid line(s) of more distinct GPU/Xid "
                "pairs than gpudash keeps were not read",
                why="The log names more different (GPU, Xid) pairs than any healthy host "
                "does; the Xids kept are shown, others may be missing.",
                fix="Read the log on the host: `dmesg | grep -i xid`.",
                facts={"dropped": k.dropped, "judged_from": f"kernel log ({k.source})"},
            )
        )
    for bus in k.fallen_off:
        if not any(e.xid == 79 and e.bus == bus for e in k.xids):
            out.append(
                Finding(
                    Severity.FAIL,
                    "health.fallen_off_bus",
                    f"{who(bus)} fell off the bus (kernel log, no Xid)",
                    why="The driver cannot reach the GPU; it serves nothing.",
                    fix="Reboot; if it recurs, reseat the GPU and check its power, "
                    "or raise a hardware ticket.",
                    facts={"bus": bus, "judged_from": f"kernel log ({k.source})"},
                )
            )
    return out


def _xid(e: Any, who: Any, source: str) -> Finding:
    row = xid_facts.info(e.xid)
    sev = xid_facts.severity_of(e.xid, e.text)
    action = row.action if row else ""
    gsp = e.xid in xid_facts.GSP_XIDS
    return Finding(
        _SEV[sev],
        f"health.xid_{e.xid}",
        f"Xid {e.xid} on {who(e.bus)}: {row.description if row else 'not in the catalog'}"
        + (f" (x{e.count})" if e.count > 1 else ""),
        why=(
            f"NVIDIA's catalog: {row.mnemonic}, immediate action {action or 'none given'}."
            if row
            else "An Xid NVIDIA's catalog does not list for current GPUs."
        )
        + (" The GPU needs that action before it serves reliably." if sev == "fail" else "")
        + (" The GPU's firmware (GSP) stopped answering the driver." if gsp else ""),
        fix=xid_facts.fix_for(e.xid, action)
        if sev != "info"
        else "Nothing for the GPU; the application that hit it may be at fault.",
        facts={
            "xid": e.xid,
            "bus": e.bus,
            "count": e.count,
            "last": e.text,
            "when": e.when,
            "first_when": e.first_when,
            "pid": e.pid,
            "process": e.process,
            "action": action,
            "catalog": xid_facts.CATALOG_URL,
            **({"workaround_source": xid_facts.GSP_SOURCE} if gsp else {}),
            "judged_from": f"kernel log ({source})",
        },
    )


def _pci_ok(health: Any) -> bool:
    """The bus was read and shows at least the GPUs nvidia-smi sees: a sysfs without the
    devices (a sandbox) reads as zero GPUs and proves nothing."""
    return health.pci is not None and not (health.gpus and not health.pci_gpus)


def _lost(health: Any, who: Any) -> list[Finding]:
    lost = sorted(set(health.lost_gpus) | set(health.unreachable))
    out = []
    if not _pci_ok(health) and health.gpus:
        why = getattr(health, "pci_why", None) or (
            f"the bus shows no NVIDIA GPU while nvidia-smi lists {len(health.gpus)}"
            if health.pci is not None
            else "not read"
        )
        out.append(
            Finding(
                Severity.INFO,
                "health.pci_unreadable",
                f"PCI bus not readable ({why}): the lost-GPU check did not run",
                why="A GPU that fell off the bus is missing from nvidia-smi too; only the "
                "PCI bus shows it is there, so without the bus a lost GPU goes unseen.",
                fix="Give the probe /sys/bus/pci (mount sysfs in the container) or install "
                "pciutils (lspci).",
                facts={"why": why, "judged_from": "/sys/bus/pci/devices, lspci"},
            )
        )
    if not lost:
        return out
    return [
        *out,
        Finding(
            Severity.FAIL,
            "health.lost_gpus",
            f"{len(lost)} GPU(s) on the PCI bus but not usable: {', '.join(lost)}",
            why=f"{len(health.pci_gpus)} NVIDIA GPU(s) on the PCI bus, {len(health.gpus)} seen by "
            "nvidia-smi: a serving engine sized for all of them will not start.",
            fix="Check `dmesg` for Xid 79 / 'fallen off the bus' on those bus ids; reboot; reseat "
            "or replace the GPU if it stays missing.",
            facts={
                "missing": lost,
                "on_bus": len(health.pci_gpus),
                "seen": len(health.gpus),
                "judged_from": "PCI bus (sysfs or lspci) against nvidia-smi -q",
            },
        ),
    ]


def _gpu(g: Any, name: str) -> list[Finding]:
    out = []
    slow = [r for r in g.reasons if r in SLOWDOWN_REASONS]
    if slow:
        out.append(
            Finding(
                Severity.WARN,
                "health.clocks_slowdown",
                f"{name} clocks held down: {', '.join(slow)}",
                why="HW/thermal slowdown cuts the clocks by half or more: tokens/s "
                "drop and one slow GPU sets the pace of tensor parallelism.",
                fix="Check cooling, fans and PSUs (`nvidia-smi -q -d PERFORMANCE,"
                "TEMPERATURE,POWER`); if it persists idle, raise a hardware ticket.",
                facts={"reasons": list(g.reasons), "judged_from": "nvidia-smi -q clocks"},
            )
        )
    if g.pcie_width and g.pcie_width_max and g.pcie_width < g.pcie_width_max:
        out.append(
            Finding(
                Severity.WARN,
                "health.pcie_width",
                f"{name} PCIe link x{g.pcie_width} of x{g.pcie_width_max}",
                why="A narrower link divides host-to-GPU bandwidth: model loading "
                "and KV-cache offload slow down by the same factor.",
                fix="Reseat the GPU or its riser/cable; check the slot in the BIOS.",
                facts={"width": g.pcie_width, "max": g.pcie_width_max, "judged_from": "-q PCI"},
            )
        )
    busy = g.util_percent is not None and g.util_percent > BUSY_PERCENT
    if busy and g.pcie_gen and g.pcie_gen_max and g.pcie_gen < g.pcie_gen_max:
        out.append(
            Finding(
                Severity.WARN,
                "health.pcie_gen",
                f"{name} PCIe Gen{g.pcie_gen} of Gen{g.pcie_gen_max} while busy",
                why="Idle links train down to save power; under load they should "
                "run at the max generation.",
                fix="Check the slot's BIOS setting and the riser; reseat the GPU.",
                facts={
                    "gen": g.pcie_gen,
                    "max": g.pcie_gen_max,
                    "util_percent": g.util_percent,
                    "judged_from": "nvidia-smi -q PCI and utilization",
                },
            )
        )
    if g.recovery_action and g.recovery_action != "None":
        out.append(
            Finding(
                Severity.FAIL,
                "health.recovery_action",
                f"{name} recovery action: {g.recovery_action}",
                why="The driver says the GPU cannot run work until this is done.",
                fix="Do what it says (drain, then `nvidia-smi -r`, or reboot).",
                facts={"action": g.recovery_action, "judged_from": "nvidia-smi -q"},
            )
        )
    return out


def _persistence(health: Any, gpu_list: Any) -> list[Finding]:
    # Persistence mode on every GPU (the driver's legacy mode, nvidia-smi -pm 1) keeps the
    # driver loaded as the daemon would: no daemon is then nothing to fix.
    legacy = bool(gpu_list) and all(getattr(g, "persistence", None) for g in gpu_list)
    if health.gpus and health.persistenced is False and not legacy:
        return [
            Finding(
                Severity.INFO,
                "health.no_persistenced",
                "nvidia-persistenced is not running",
                why="Without it the driver unloads state when idle: the first CUDA "
                "call after idle pays a multi-second init.",
                fix="`systemctl enable --now nvidia-persistenced`.",
                facts={"judged_from": "/proc/*/comm"},
            )
        ]
    return []


def _shm(health: Any) -> list[Finding]:
    if health.shm_kib is not None and health.shm_kib < SHM_MIN_KIB:
        return [
            Finding(
                Severity.WARN,
                "health.shm_small",
                f"/dev/shm is {health.shm_kib // 1024} MiB",
                why="NCCL and the engines' multi-process workers share memory "
                "through /dev/shm; 64 MiB (Docker's default) fails tensor parallel.",
                fix="Run the container with --ipc=host or --shm-size=16g (or more).",
                facts={"shm_kib": health.shm_kib, "judged_from": "df -Pk /dev/shm"},
            )
        ]
    return []
