"""GPU health: Xids, clock slowdowns, PCIe links, memory errors, lost GPUs, fabric manager,
RDMA ports, /dev/shm and memlock, from the health section. Pure functions of its result.

Every finding names the GPU (index and bus id, where the gpus section gives the index), says
why it matters for serving, and gives the fix. A fact the probe could not read (a restricted
kernel log, no nvidia-smi) is an info finding saying so, never "ok".
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from gpudash.checks.facts import xid as xid_facts
from gpudash.checks.finding import Finding, Severity
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
    return check_health(health, ctx.gpu_list)


def check_health(health: Any, gpu_list: Any = ()) -> list[Finding]:
    index = {bus_key(getattr(g, "bus_id", None)): g.index for g in gpu_list or ()}
    for n, g in enumerate(health.gpus):  # nvidia-smi -q lists GPUs in index order
        index.setdefault(g.key, n)

    def who(key: str | None) -> str:
        i = index.get(key)
        return f"GPU {i} ({key})" if i is not None else f"GPU {key or '?'}"

    out: list[Finding] = []
    out += _xids(health, who)
    out += _lost(health, who)
    for g in health.gpus:
        out += _gpu(g, who(g.key))
    # Persistence mode on every GPU (the driver's legacy mode, nvidia-smi -pm 1) keeps the
    # driver loaded as the daemon would: no daemon is then nothing to fix.
    legacy = bool(gpu_list) and all(getattr(g, "persistence", None) for g in gpu_list)
    out += _fabric(health, legacy)
    out += _network(health)
    looked = health.gpus or health.kernel.source or health.pci is not None
    if not any(f.severity.rank >= Severity.WARN.rank for f in out) and looked:
        seen = [f"{len(health.gpus)} GPU(s)"] if health.gpus else []
        if health.kernel.source:
            seen.append(f"kernel log ({health.kernel.source})")
        out.append(
            Finding(
                Severity.OK,
                "health.ok",
                "GPU health: nothing wrong in " + ", ".join(seen or ["the PCI bus"]),
                facts={"looked_at": seen},
            )
        )
    return out


def _xids(health: Any, who: Any) -> list[Finding]:
    k = health.kernel
    if k.source is None:
        return [
            Finding(
                Severity.INFO,
                "health.kernel_log_unreadable",
                "Kernel log not readable: Xid errors unknown",
                why="Xids are the driver's record of GPU faults since boot; without "
                "the log a GPU that faulted looks healthy.",
                fix="Run the probe as a user in the adm or systemd-journal group, or "
                "allow dmesg (sysctl kernel.dmesg_restrict=0).",
                facts={"why": k.why_unreadable},
            )
        ]
    groups: dict[tuple[int, str | None], list[Any]] = {}
    for e in k.xids:
        groups.setdefault((e.xid, e.bus), []).append(e)
    out = []
    for (code, bus), events in groups.items():
        row = xid_facts.info(code)
        sev = max(
            (xid_facts.severity_of(code, e.text) for e in events),
            key=("info", "warn", "fail").index,
        )
        last = events[-1]
        action = row.action if row else ""
        out.append(
            Finding(
                _SEV[sev],
                f"health.xid_{code}",
                f"Xid {code} on {who(bus)}: {row.description if row else 'not in the catalog'}"
                + (f" (x{len(events)})" if len(events) > 1 else ""),
                why=(
                    f"NVIDIA's catalog: {row.mnemonic}, immediate action {action or 'none given'}."
                    if row
                    else "An Xid NVIDIA's catalog does not list for current GPUs."
                )
                + (
                    " The GPU needs that action before it serves reliably." if sev == "fail" else ""
                ),
                fix=xid_facts.ACTION_FIX.get(action, "See NVIDIA's Xid catalog for this code.")
                if sev != "info"
                else "Nothing for the GPU; the application that hit it may be at fault.",
                facts={
                    "xid": code,
                    "bus": bus,
                    "count": len(events),
                    "last": last.text,
                    "when": last.when,
                    "pid": last.pid,
                    "process": last.process,
                    "action": action,
                    "source": k.source,
                    "catalog": xid_facts.CATALOG_URL,
                },
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
                    facts={"bus": bus},
                )
            )
    return out


def _lost(health: Any, who: Any) -> list[Finding]:
    lost = sorted(set(health.lost_gpus) | set(health.unreachable))
    if not lost:
        return []
    return [
        Finding(
            Severity.FAIL,
            "health.lost_gpus",
            f"{len(lost)} GPU(s) on the PCI bus but not usable: {', '.join(lost)}",
            why=f"{len(health.pci_gpus)} NVIDIA GPU(s) on the PCI bus, {len(health.gpus)} seen by "
            "nvidia-smi: a serving engine sized for all of them will not start.",
            fix="Check `dmesg` for Xid 79 / 'fallen off the bus' on those bus ids; reboot; reseat "
            "or replace the GPU if it stays missing.",
            facts={"missing": lost, "on_bus": len(health.pci_gpus), "seen": len(health.gpus)},
        )
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
                facts={"reasons": list(g.reasons)},
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
                facts={"width": g.pcie_width, "max": g.pcie_width_max},
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
                facts={"gen": g.pcie_gen, "max": g.pcie_gen_max, "util_percent": g.util_percent},
            )
        )
    out += _memory(g, name)
    if g.recovery_action and g.recovery_action != "None":
        out.append(
            Finding(
                Severity.FAIL,
                "health.recovery_action",
                f"{name} recovery action: {g.recovery_action}",
                why="The driver says the GPU cannot run work until this is done.",
                fix="Do what it says (drain, then `nvidia-smi -r`, or reboot).",
                facts={"action": g.recovery_action},
            )
        )
    return out


def _memory(g: Any, name: str) -> list[Finding]:
    out = []
    if g.remap_failure:
        out.append(
            Finding(
                Severity.FAIL,
                "health.remap_failure",
                f"{name} row remapping failed",
                why="The GPU can no longer hide bad HBM rows: uncorrectable errors "
                "will keep crashing work on it (an RMA criterion).",
                fix="Take the GPU out of service and raise an RMA with the vendor.",
                facts={"uncorrectable_rows": g.remap_uncorrectable},
            )
        )
    if g.unrepairable_memory:
        out.append(
            Finding(
                Severity.FAIL,
                "health.unrepairable_memory",
                f"{name} reports unrepairable memory",
                why="Memory errors the GPU cannot repair will recur.",
                fix="Take the GPU out of service and raise an RMA.",
                facts={},
            )
        )
    pending = []
    if g.remap_pending:
        pending.append("row remap")
    if g.retired_pending:
        pending.append("page retirement")
    pending += list(g.repair_pending)
    if pending:
        out.append(
            Finding(
                Severity.WARN,
                "health.reset_pending",
                f"{name} has a pending {', '.join(pending)}: reset the GPU",
                why="The repair takes effect only after a GPU reset; until then the "
                "bad memory can still be handed to a model.",
                fix="Drain the GPU, then `nvidia-smi -r -i N` (or reboot).",
                facts={"pending": pending},
            )
        )
    if g.ecc_uncorrected_volatile:
        out.append(
            Finding(
                Severity.FAIL,
                "health.ecc_uncorrected",
                f"{name} {g.ecc_uncorrected_volatile} uncorrectable ECC error(s) "
                "since the driver loaded",
                why="Uncorrectable errors corrupt or kill the work that hits them.",
                fix="Reset the GPU; if errors return, raise a hardware ticket.",
                facts={
                    "volatile": g.ecc_uncorrected_volatile,
                    "aggregate": g.ecc_uncorrected_aggregate,
                },
            )
        )
    if g.sram_threshold_exceeded:
        out.append(
            Finding(
                Severity.FAIL,
                "health.sram_threshold",
                f"{name} SRAM error threshold exceeded",
                why="NVIDIA's Xid 48 guidance: past the SRAM threshold, run field "
                "diagnostics and follow the RMA flow.",
                fix="Run the field diagnostics; RMA the GPU if they fail.",
                facts={},
            )
        )
    return out


def _fabric(health: Any, legacy_persistence: bool = False) -> list[Finding]:
    fm = health.fabric_manager
    out = []
    if fm is not None:
        running = fm.active == "active" or any(
            d.startswith("nv-fabricmanage") for d in health.daemons or ()
        )
        drv = health.driver_version
        mismatch = fm.version and drv and fm.version != drv
        if not running or mismatch or (fm.driver_seen and fm.version != fm.driver_seen):
            out.append(
                Finding(
                    Severity.FAIL,
                    "health.fabric_manager",
                    "NVSwitch fabric manager "
                    + (
                        f"{fm.version} does not match driver {fm.driver_seen or drv}"
                        if (mismatch or fm.driver_seen)
                        else "is not running"
                    )
                    + f" ({health.nvswitches} NVSwitch(es))",
                    why="Without a running fabric manager of the driver's exact "
                    "version the NVSwitch fabric never trains: CUDA fails with "
                    "error 802 (system not yet initialized).",
                    fix="Install nvidia-fabricmanager of the driver's version and "
                    "`systemctl enable --now nvidia-fabricmanager`.",
                    facts={
                        "active": fm.active,
                        "sub": fm.sub,
                        "version": fm.version,
                        "driver": drv,
                        "log": list(fm.log),
                    },
                )
            )
    if health.gpus and health.persistenced is False and not legacy_persistence:
        out.append(
            Finding(
                Severity.INFO,
                "health.no_persistenced",
                "nvidia-persistenced is not running",
                why="Without it the driver unloads state when idle: the first CUDA "
                "call after idle pays a multi-second init.",
                fix="`systemctl enable --now nvidia-persistenced`.",
                facts={},
            )
        )
    return out


def _network(health: Any) -> list[Finding]:
    out = []
    ports = list(health.rdma)
    down = [p for p in ports if p.state != "ACTIVE"]
    if down:
        out.append(
            Finding(
                Severity.WARN,
                "health.rdma_down",
                f"{len(down)} of {len(ports)} RDMA port(s) not active: "
                + ", ".join(f"{p.device}/{p.port} {p.state}" for p in down[:8]),
                why="NCCL spreads multi-node traffic over every HCA; a port down "
                "lowers bandwidth or makes ranks pick a slower path.",
                fix="Check the cable and the switch port (`ibstat`); exclude the "
                "HCA with NCCL_IB_HCA until fixed.",
                facts={"down": [f"{p.device}/{p.port}" for p in down]},
            )
        )
    rates = [p.rate_gbps for p in ports if p.state == "ACTIVE" and p.rate_gbps]
    if len(rates) >= 2:
        common, _ = Counter(rates).most_common(1)[0]
        slow = [p for p in ports if p.state == "ACTIVE" and p.rate_gbps and p.rate_gbps < common]
        if slow:
            out.append(
                Finding(
                    Severity.WARN,
                    "health.rdma_slow",
                    f"{len(slow)} RDMA port(s) below {common:g} Gb/s",
                    why="Collectives run at the slowest link's speed.",
                    fix="Check the cable/transceiver and the switch port speed.",
                    facts={"slow": [f"{p.device}/{p.port} {p.rate_gbps:g}" for p in slow]},
                )
            )
    if health.shm_kib is not None and health.shm_kib < SHM_MIN_KIB:
        out.append(
            Finding(
                Severity.WARN,
                "health.shm_small",
                f"/dev/shm is {health.shm_kib // 1024} MiB",
                why="NCCL and the engines' multi-process workers share memory "
                "through /dev/shm; 64 MiB (Docker's default) fails tensor parallel.",
                fix="Run the container with --ipc=host or --shm-size=16g (or more).",
                facts={"shm_kib": health.shm_kib},
            )
        )
    if ports and not health.memlock_unlimited and health.memlock_kib is not None:
        out.append(
            Finding(
                Severity.WARN,
                "health.memlock",
                f"memlock limit {health.memlock_kib} KiB with RDMA ports present",
                why="RDMA registers (pins) buffers; a low memlock limit makes NCCL "
                "fail to register memory over InfiniBand/RoCE.",
                fix="Set `ulimit -l unlimited` (limits.conf, or --ulimit memlock=-1).",
                facts={"memlock_kib": health.memlock_kib},
            )
        )
    return out
