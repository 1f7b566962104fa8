"""Hosts sharing a tag should be alike: a host whose GPU count, GPU model, driver, CUDA, nvcc,
torch or NVLink summary differs from its group's majority gets a warn naming the difference
("driver 570.124.06 here, 580.159.04 on 7 others")."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpudash.checks import Finding, Severity
from gpudash.checks.context import Context
from gpudash.model import HostResult, HostState

TRAITS = ("gpus", "gpu_model", "driver", "cuda", "nvcc", "torch", "nvlink")
_LABEL = {
    "gpus": "GPU count",
    "gpu_model": "GPU model",
    "driver": "driver",
    "cuda": "CUDA",
    "nvcc": "nvcc",
    "torch": "torch",
    "nvlink": "NVLink",
}


def traits(result: HostResult) -> dict[str, str | None]:
    """The values compared across a group; None where the probe has no answer."""
    ctx = Context.build(result)
    gpus, toolkit, topo = ctx.gpus, ctx.toolkit, ctx.topology
    out: dict[str, str | None] = dict.fromkeys(TRAITS)
    if gpus is not None and not gpus.missing:
        out["gpus"] = str(len(gpus.gpus))
        out["gpu_model"] = ", ".join(gpus.models) or None
        out["cuda"] = gpus.cuda_version
    out["driver"] = ctx.driver_version
    if toolkit is not None:
        first = next((n for n in toolkit.nvcc if n.release), None)
        out["nvcc"] = (first.version or first.release) if first else "none"
    if ctx.env is not None:
        torches = sorted({v.packages["torch"] for v in ctx.venvs if "torch" in v.packages})
        out["torch"] = ", ".join(torches) or "none"
    if topo is not None and not topo.missing:
        out["nvlink"] = topo.summary
    return out


def check(ctx: Context) -> list[Finding]:
    host = ctx.host
    if host is None or not host.tags or not ctx.peers:
        return []
    mine = traits(ctx.result)
    out: list[Finding] = []
    done: set[str] = set()
    for tag in host.tags:
        group = [
            r
            for h, r in ctx.peers
            if tag in h.tags and r.state is not HostState.FAILED and r.sections
        ]
        if len(group) < 2:
            continue  # one other host is a pair, not a majority
        theirs = [traits(r) for r in group]
        for trait in TRAITS:
            if trait in done or mine[trait] is None:
                continue
            values = Counter(t[trait] for t in theirs if t[trait] is not None)
            values[mine[trait]] += 1
            total = sum(values.values())
            common, n = values.most_common(1)[0]
            if n * 2 <= total or common == mine[trait]:
                continue
            done.add(trait)
            others = n  # the majority holds no copy of this host's value
            label = _LABEL[trait]
            out.append(
                Finding(
                    Severity.WARN,
                    f"compare.{trait}",
                    f"{label} {mine[trait]} here, {common} on {others} other"
                    f"{'s' if others != 1 else ''} tagged {tag!r}",
                    why="Hosts with the same tag are meant to be interchangeable; a different "
                    f"{label} behaves differently under the same launch command.",
                    fix=f"Bring this host's {label} in line with the group (or re-tag it).",
                    facts=_facts(tag, trait, mine[trait], values, total),
                )
            )
    return out


def _facts(tag: str, trait: str, mine: Any, values: Counter[Any], total: int) -> dict[str, Any]:
    return {
        "tag": tag,
        "trait": trait,
        "here": mine,
        "group": {str(v): c for v, c in values.most_common()},
        "hosts": total,
    }
