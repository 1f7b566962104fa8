"""The NVLink fabric as each GPU sees it, and the service that trains it.

`nvidia-smi -q` prints a `Fabric` block for every GPU: `State` (Not Supported / Not Started /
In Progress / Completed) and `Status` (an NVML return value, "to be checked only if the state
is complete": NVML API, nvmlGpuFabricInfo_t, https://docs.nvidia.com/deploy/nvml-api/).
CUDA cannot start on a GPU whose registration has not completed: it fails with error 802,
cudaErrorSystemNotReady ("system not yet initialized"); the Fabric Manager User Guide
(https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/) says an `In Progress`
state means the fabric manager is not running or lacks its NVLSM dependency (NVLink 5).
A `Completed` state whose status is not Success (e.g. "Insufficient Resources", seen on a
GB200 NVL node: Azure/azhpc-images#506) is a fabric the GPU joined in error.

The block is judged on every GPU, NVSwitch board or not (an NVL72 compute tray has no
NVSwitch on its own PCI bus). The fabric manager service is judged only where NVSwitches are
on the bus, and only from what was read: no systemctl (a container) is "unknown", never
"not running"; a service that failed while the fabric still reads Completed is a warn (the
fabric stays up until the next GPU reset or reboot, which then cannot train it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpudash.checks.finding import Finding, Severity

FABRIC_SETTLE_S = 600  # gpudash's margin: registration takes seconds once the manager runs
_NOT_JUDGED = (None, "N/A", "Not Supported")
_802 = ("802", "system not yet initialized", "cudaErrorSystemNotReady", "SYSTEM_NOT_READY")


def fabric_findings(
    health: Any, who: Any, uptime_s: float | None = None, evidence: Iterable[str] = ()
) -> list[Finding]:
    cuda_802 = next((e for e in evidence if any(k in e for k in _802)), None)
    out = _states(health, who, uptime_s, cuda_802)
    out += _service(health)
    if cuda_802 and not any(f.code == "health.fabric_state" for f in out):
        states = sorted({g.fabric_state or "not reported" for g in health.gpus})
        out.append(
            Finding(
                Severity.FAIL,
                "health.cuda_802",
                "CUDA error 802 (system not yet initialized) on this host; fabric state "
                + ", ".join(states),
                why="Error 802 is CUDA refusing to start before the GPU has registered with "
                "the NVLink fabric (Fabric Manager User Guide).",
                fix="Check `nvidia-smi -q | grep -A 3 Fabric` on every GPU and the fabric "
                "manager (`systemctl status nvidia-fabricmanager`); restart it, then reset "
                "the GPUs.",
                facts={
                    "evidence": cuda_802[:300],
                    "fabric_states": states,
                    "judged_from": "verify result and `nvidia-smi -q` Fabric",
                },
            )
        )
    return out


def _states(health: Any, who: Any, uptime_s: float | None, cuda_802: str | None) -> list[Finding]:
    waiting: list[Any] = []
    failed: list[Any] = []
    for g in health.gpus:
        state, status = g.fabric_state, g.fabric_status
        if state in _NOT_JUDGED:
            continue
        if state == "Completed":
            if status not in (*_NOT_JUDGED, "Success"):
                failed.append(g)
        else:
            waiting.append(g)
    out = []
    facts_802 = {"cuda_error_802": cuda_802[:300]} if cuda_802 else {}
    if waiting:
        young = uptime_s is not None and uptime_s < FABRIC_SETTLE_S
        sev = Severity.INFO if young else Severity.FAIL if uptime_s is not None else Severity.WARN
        states = sorted({g.fabric_state for g in waiting})
        since = f"{uptime_s / 60:.0f} min after boot" if uptime_s is not None else "uptime unknown"
        out.append(
            Finding(
                sev,
                "health.fabric_state",
                f"NVLink fabric {'/'.join(states)} on {len(waiting)} GPU(s), {since}: "
                + ", ".join(who(g.key) for g in waiting[:8]),
                why="CUDA does not start on a GPU until it has registered with the NVLink "
                "fabric: every CUDA call fails with error 802 (system not yet initialized)."
                + (" This host's CUDA did fail with 802." if cuda_802 else "")
                + (" It may still be booting." if young else ""),
                fix="Start the fabric manager (`systemctl enable --now nvidia-fabricmanager`, "
                "of the driver's exact version; NVLink 5 boards also need nvlsm) and watch "
                "`nvidia-smi -q | grep -A 3 Fabric` reach Completed; reset the GPUs if it stays.",
                facts={
                    "states": {who(g.key): g.fabric_state for g in waiting},
                    "uptime_s": uptime_s,
                    "settle_s": FABRIC_SETTLE_S,
                    **facts_802,
                    "judged_from": "`nvidia-smi -q` Fabric / State, /proc/uptime",
                },
            )
        )
    if failed:
        out.append(
            Finding(
                Severity.FAIL,
                "health.fabric_state",
                f"NVLink fabric Completed with status {failed[0].fabric_status} on "
                f"{len(failed)} GPU(s): " + ", ".join(who(g.key) for g in failed[:8]),
                why="The GPU finished registering but the fabric refused it: its NVLink "
                "peers and multi-node NVLink are unusable."
                + (" This host's CUDA failed with 802." if cuda_802 else ""),
                fix="Read the fabric manager's log for the reason; check the NVLink trays and "
                "cables (GB200 NVL: the rack's switch trays), then reset the GPUs.",
                facts={
                    "status": {who(g.key): g.fabric_status for g in failed},
                    **facts_802,
                    "judged_from": "`nvidia-smi -q` Fabric / State and Status",
                },
            )
        )
    return out


def _service(health: Any) -> list[Finding]:
    fm = health.fabric_manager
    if fm is None:
        return []
    seen_process = any(d.startswith("nv-fabricmanage") for d in health.daemons or ())
    drv = health.driver_version
    mismatch = bool(fm.version and drv and fm.version != drv) or bool(
        fm.driver_seen and fm.version != fm.driver_seen
    )
    base = {
        "active": fm.active,
        "sub": fm.sub,
        "version": fm.version,
        "driver": drv,
        "log": list(fm.log),
        "judged_from": "systemctl status nvidia-fabricmanager",
    }
    switches = f"({health.nvswitches} NVSwitch(es))"
    if mismatch:
        return [
            Finding(
                Severity.FAIL,
                "health.fabric_manager",
                f"NVSwitch fabric manager {fm.version} does not match driver "
                f"{fm.driver_seen or drv} {switches}",
                why="The fabric manager refuses a driver of another version: the NVSwitch "
                "fabric never trains and CUDA fails with error 802.",
                fix="Install nvidia-fabricmanager of the driver's exact version and "
                "`systemctl enable --now nvidia-fabricmanager`.",
                facts=base,
            )
        ]
    if fm.active == "active" or seen_process:
        return []
    if fm.active is None:
        return [
            Finding(
                Severity.INFO,
                "health.fabric_manager_unknown",
                f"NVSwitch fabric manager state unknown: {fm.unknown or 'systemctl gave no state'}"
                f" {switches}",
                why="Without systemd's answer (a container has no systemctl) gpudash cannot "
                "say whether the service runs; the GPUs' fabric state says whether it did "
                "its work.",
                fix="Ask the host itself: `systemctl status nvidia-fabricmanager`.",
                facts={**base, "judged_from": "the probe's fm part"},
            )
        ]
    completed = [g for g in health.gpus if g.fabric_state == "Completed"]
    if completed and all(g.fabric_status in (None, "N/A", "Success") for g in completed):
        return [
            Finding(
                Severity.WARN,
                "health.fabric_manager",
                f"NVSwitch fabric manager is {fm.active} while the fabric still reads Completed "
                f"{switches}",
                why="The trained fabric stays up for now, but the next GPU reset or reboot "
                "cannot train it again: CUDA then fails with error 802.",
                fix="Read `journalctl -u nvidia-fabricmanager` for why it stopped; "
                "`systemctl restart nvidia-fabricmanager`.",
                facts=base,
            )
        ]
    return [
        Finding(
            Severity.FAIL,
            "health.fabric_manager",
            f"NVSwitch fabric manager is not running ({fm.active}) {switches}",
            why="Without a running fabric manager of the driver's exact version the NVSwitch "
            "fabric never trains: CUDA fails with error 802 (system not yet initialized).",
            fix="Install nvidia-fabricmanager of the driver's version and "
            "`systemctl enable --now nvidia-fabricmanager`.",
            facts=base,
        )
    ]
