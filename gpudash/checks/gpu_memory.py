"""One GPU's memory health: ECC counters, row remapping (Ampere and newer), retired pages
(Volta/Turing and older: "Pending Page Blacklist"), Blackwell's repair flags, and the memory
Xids of the kernel log read together with them.

Why together: an Xid 48 (double-bit error), 94 (contained) or 95 (uncontained) is followed by
the driver marking the bad row or page (Xid 63, "reset gpu to activate"), which takes effect
only at the next GPU reset (NVIDIA, "GPU Memory Error Management",
https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html; "Dynamic Page Retirement",
https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html: "New retired page, reload
the driver to activate"). So what the operator must do is read from the GPU's own state in
`nvidia-smi -q`, not from the Xid alone: pending -> reset; remap failure -> RMA; neither,
with the errors counted -> the repair already took effect.
"""

from __future__ import annotations

from typing import Any

from gpudash.checks.facts import xid as xid_facts
from gpudash.checks.finding import Finding, Severity

# Xids that name a memory error or its repair (the catalog's rows, checks/facts/xid.py).
MEMORY_XIDS = frozenset({48, 63, 64, 92, 94, 95, 140, 171, 172})


def memory_findings(g: Any, name: str, xids: list[Any]) -> list[Finding]:
    """The GPU's memory state findings, and one finding joining its memory Xids (`xids`,
    already those of this GPU) to that state."""
    out = _state(g, name)
    if xids:
        out.append(_joined(g, name, xids, out))
    return out


def state_read(g: Any) -> bool:
    """Whether `nvidia-smi -q` gave any memory-repair fact for this GPU."""
    return any(
        v is not None
        for v in (g.remap_pending, g.remap_failure, g.retired_pending, g.retired_dbe,
                  g.ecc_uncorrected_volatile, g.ecc_uncorrected_aggregate)
    )  # fmt: skip


def _joined(g: Any, name: str, xids: list[Any], state: list[Finding]) -> Finding:
    codes = sorted({e.xid for e in xids})
    seen = ", ".join(
        f"Xid {c}" + (f" x{n}" if (n := sum(e.count for e in xids if e.xid == c)) > 1 else "")
        for c in codes
    )
    sev = max((_SEV[xid_facts.severity_of(e.xid, e.text)] for e in xids), key=lambda s: s.rank)
    facts: dict[str, Any] = {
        "xids": {str(c): sum(e.count for e in xids if e.xid == c) for c in codes},
        "last": xids[-1].text,
        "when": xids[-1].when,
        **_state_facts(g),
        "judged_from": "kernel log Xids and `nvidia-smi -q` ECC / Remapped Rows / Retired Pages",
    }
    if not state_read(g):
        return Finding(
            max(sev, Severity.WARN, key=lambda s: s.rank),
            "health.memory_xid",
            f"{name} memory error in the kernel log ({seen}); its remap / retired-page state "
            "was not read",
            why="A memory Xid is repaired by a row remap or page retirement that takes effect "
            "at the next reset; without `nvidia-smi -q` nobody knows whether it is pending.",
            fix="Run `nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT,ECC -i N`; reset the GPU "
            "if a remap or retirement is pending.",
            facts=facts,
        )
    worst = max((f.severity for f in state), key=lambda s: s.rank, default=Severity.OK)
    if worst is Severity.FAIL:
        verdict, fix = "the repair failed or is exhausted", "Take the GPU out of service (RMA)."
    elif worst is Severity.WARN:
        verdict = "a repair is pending"
        fix = "Drain the GPU, then `nvidia-smi -r -i N` (or reboot)."
    else:
        verdict = "no repair pending (remapped / retired already)"
        fix = "Nothing pending; watch the counters. If the Xids recur, run the field diagnostics."
        sev = Severity.WARN if sev.rank >= Severity.WARN.rank else Severity.INFO
    return Finding(
        max(sev, worst, key=lambda s: s.rank),
        "health.memory_xid",
        f"{name} memory error ({seen}): {verdict}",
        why="The driver repairs a memory error by remapping the row (or retiring the page); "
        "the repair takes effect at the next GPU reset, and a failed one means the GPU "
        "cannot hide its bad memory.",
        fix=fix,
        facts=facts,
    )


def _state_facts(g: Any) -> dict[str, Any]:
    return {
        "ecc_uncorrected_volatile": g.ecc_uncorrected_volatile,
        "ecc_uncorrected_aggregate": g.ecc_uncorrected_aggregate,
        "remapped_rows_uncorrectable": g.remap_uncorrectable,
        "remap_pending": g.remap_pending,
        "remap_failure": g.remap_failure,
        "retired_pages_sbe": g.retired_sbe,
        "retired_pages_dbe": g.retired_dbe,
        "retired_pages_pending": g.retired_pending,
    }


def _state(g: Any, name: str) -> list[Finding]:
    out = []
    src = "nvidia-smi -q"
    if g.remap_failure:
        out.append(
            Finding(
                Severity.FAIL,
                "health.remap_failure",
                f"{name} row remapping failed",
                why="The GPU can no longer hide bad HBM rows: uncorrectable errors "
                "will keep crashing work on it (an RMA criterion).",
                fix="Take the GPU out of service and raise an RMA with the vendor.",
                facts={"uncorrectable_rows": g.remap_uncorrectable, "judged_from": src},
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
                facts={"judged_from": src},
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
                why="The repair takes effect only after a GPU reset (or driver reload); until "
                "then the bad memory can still be handed to a model.",
                fix="Drain the GPU, then `nvidia-smi -r -i N` (or reboot).",
                facts={"pending": pending, **_state_facts(g), "judged_from": src},
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
                    "judged_from": src,
                },
            )
        )
    if g.retired_dbe and not g.retired_pending:
        out.append(
            Finding(
                Severity.INFO,
                "health.retired_pages",
                f"{name} has {g.retired_dbe} page(s) retired for double-bit errors"
                + (f", {g.retired_sbe} for single-bit" if g.retired_sbe else ""),
                why="Retired pages are memory the driver no longer hands out: the repair "
                "worked. A count that keeps growing is a failing GPU.",
                fix="Nothing now; compare the count at the next probe.",
                facts={"sbe": g.retired_sbe, "dbe": g.retired_dbe, "judged_from": src},
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
                facts={"judged_from": src},
            )
        )
    return out


_SEV = {"fail": Severity.FAIL, "warn": Severity.WARN, "info": Severity.INFO}
