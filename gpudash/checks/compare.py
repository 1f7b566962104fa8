"""Hosts sharing a tag should be alike: a host whose GPU count, GPU model, driver, CUDA, nvcc,
torch or NVLink summary differs from its group's majority gets a warn naming the difference
("driver 570.124.06 here, 580.159.04 on 7 others")."""

from __future__ import annotations

from collections import Counter

from gpudash.checks.context import Context
from gpudash.checks.finding import Fact, Finding, Severity
from gpudash.checks.groups import TRAITS, Groups, traits

_LABEL = {
    "gpus": "GPU count",
    "gpu_model": "GPU model",
    "driver": "driver",
    "cuda": "CUDA",
    "nvcc": "nvcc",
    "torch": "torch",
    "nvlink": "NVLink",
}


def check(ctx: Context) -> list[Finding]:
    host = ctx.host
    if host is None or not host.tags:
        return []
    groups = ctx.groups
    if groups is None:
        if not ctx.peers:
            return []
        groups = Groups.of(ctx.peers)
    mine = traits(ctx.result)
    own = groups.member(host.name)  # this host's own share of the counts, taken out below
    out: list[Finding] = []
    done: set[str] = set()
    for tag in host.tags:
        inside = own is not None and tag in own[0]
        if groups.size(tag) - inside < 2:
            continue  # one other host is a pair, not a majority
        for trait in TRAITS:
            if trait in done or mine[trait] is None:
                continue
            values = groups.counts(tag, trait)
            if inside and own is not None and own[1][trait] is not None:
                values[own[1][trait]] -= 1
            values[mine[trait]] += 1
            values = +values  # drop the zero left by a changed value
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


def _facts(tag: str, trait: str, mine: str, values: Counter[str], total: int) -> dict[str, Fact]:
    return {
        "tag": tag,
        "trait": trait,
        "here": mine,
        "group": {str(v): c for v, c in values.most_common()},
        "hosts": total,
    }
