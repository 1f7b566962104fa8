"""NVLink: on SXM/HGX-class GPU sets, every pair should be on NVLink, evenly, with the fabric up.

An 8-GPU HGX H100/H200/B200 board shows NV18 on all 28 pairs; a pair on PCIe, one pair with
fewer links (NV17 among NV18), inactive links in `nvidia-smi nvlink -s`, or an NVSwitch fabric
whose state is not "Completed" each mean a board or fabric-manager problem, and tensor
parallel traffic silently falling back to PCIe (or CUDA init failing outright).
"""

from __future__ import annotations

import re
from collections import Counter

from gpudash.checks.context import Context
from gpudash.checks.finding import Finding, Severity

# GPU names sold as SXM/HGX modules (always NVLinked, usually through NVSwitch). PCIe and NVL
# (PCIe card with a bridge) variants are excluded by name.
_SXM_CLASS = re.compile(r"SXM|HGX|\b(?:H100|H200|H800|H20|B100|B200|B300|GB200|GB300)\b", re.I)
_NOT_SXM = re.compile(r"PCIE|\bNVL\b", re.I)
_NV = re.compile(r"NV(\d+)")
FABRIC_READY = ("Completed", "N/A")


def sxm_class(name: str) -> bool:
    return bool(_SXM_CLASS.search(name)) and not _NOT_SXM.search(name)


def check(ctx: Context) -> list[Finding]:
    gpus = ctx.gpu_list
    if len(gpus) < 2 or not all(sxm_class(g.name) for g in gpus):
        return []
    topo = ctx.topology
    if topo is None or topo.missing or topo.matrix is None:
        return []
    names = ", ".join(dict.fromkeys(g.name for g in gpus))
    out: list[Finding] = []
    pairs = list(topo.matrix.pairs())
    off = [(a, b, t) for a, b, t in pairs if not _NV.fullmatch(t)]
    if off:
        shown = [f"{a}-{b} {t}" for a, b, t in off[:8]]
        out.append(
            Finding(
                Severity.FAIL,
                "nvlink.missing_pairs",
                f"{len(off)} of {len(pairs)} GPU pairs are not on NVLink on a {names} board",
                why=(
                    "SXM/HGX GPUs are all NVLinked; a pair on PCIe means a failed link or "
                    "switch tray, and tensor-parallel all-reduce drops to PCIe speed."
                ),
                fix="Check `nvidia-smi topo -m` and `nvidia-smi nvlink -s`; reset the GPUs or "
                "raise a hardware ticket with the provider.",
                facts={"pairs": shown, "more": max(0, len(off) - len(shown)), "gpus": names},
            )
        )
    counts = [(a, b, int(m.group(1))) for a, b, t in pairs if (m := _NV.fullmatch(t))]
    if counts:
        common, _ = Counter(n for *_, n in counts).most_common(1)[0]
        low = [(a, b, n) for a, b, n in counts if n < common]
        if low:
            shown = [f"{a}-{b} NV{n}" for a, b, n in low[:8]]
            out.append(
                Finding(
                    Severity.WARN,
                    "nvlink.fewer_links",
                    f"{len(low)} GPU pair(s) have fewer NVLinks than the others (NV{common})",
                    why="A pair with fewer links has a link down: its bandwidth is lower and "
                    "collectives run at the slowest pair's speed.",
                    fix="Check `nvidia-smi nvlink -s` for inactive links; reset the GPUs or "
                    "raise a hardware ticket.",
                    facts={"pairs": shown, "usual": f"NV{common}"},
                )
            )
    if topo.inactive_links:
        per_gpu = {
            g.index: [link.link for link in g.links if not link.active]
            for g in (topo.nvlink.gpus if topo.nvlink else ())
            if any(not link.active for link in g.links)
        }
        out.append(
            Finding(
                Severity.WARN,
                "nvlink.inactive_links",
                f"{topo.inactive_links} NVLink(s) inactive",
                why="Inactive links lower NVLink bandwidth between the GPUs they serve.",
                fix="Reset the GPUs (`nvidia-smi -r`) or reboot; if they stay inactive, raise a "
                "hardware ticket.",
                facts={"inactive": {f"GPU {k}": v for k, v in per_gpu.items()}},
            )
        )
    bad = [s for s in topo.fabric_states if s not in FABRIC_READY]
    if bad:
        out.append(
            Finding(
                Severity.FAIL,
                "nvlink.fabric_not_ready",
                f"GPU fabric state is {', '.join(sorted(set(bad)))} on {len(bad)} GPU(s)",
                why="Until the NVSwitch fabric is trained, CUDA init fails (error 802, "
                '"system not yet initialized") or NVLink is unusable.',
                fix="Start nvidia-fabricmanager (matching the driver version) and wait for "
                "`nvidia-smi -q` to show Fabric State: Completed.",
                facts={"states": list(topo.fabric_states)},
            )
        )
    if not out:
        out.append(
            Finding(
                Severity.OK,
                "nvlink.ok",
                f"NVLink: {topo.summary}",
                facts={"summary": topo.summary},
            )
        )
    return out
