"""Hosts sharing a tag should be alike: a host whose GPU count, GPU model, driver, CUDA, nvcc,
torch or NVLink summary differs from its group's majority gets a warn naming the difference
("driver 570.124.06 here, 580.159.04 on 7 others").

Two hosts sharing a tag have no majority, yet a 1x and an 8x H200 both tagged `h200` are
exactly what a tag is meant to catch: each gets the warn, naming the other ("GPU count 1
here, 8 on gpu2, the other host tagged 'h200'"). An `[expect]` key for the trait wins over
both rules: the expect check judges that trait against the config, not against peers."""

from __future__ import annotations

from collections import Counter

from gpudash.checks.context import Context
from gpudash.checks.finding import Fact, Finding, Severity
from gpudash.checks.groups import TRAITS, Groups, traits

_EXPECTED_BY = {  # trait -> the Expect fields that, when set, judge it instead
    "gpus": ("gpus",),
    "gpu_model": ("gpu_name",),
    "driver": ("driver",),
    "cuda": ("cuda",),
    "nvcc": ("nvcc",),
    "torch": ("torch",),
    "nvlink": ("nvlink", "min_nvlink"),
}

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
    expect = ctx.expect
    done: set[str] = {
        trait
        for trait, keys in _EXPECTED_BY.items()
        if expect is not None and any(getattr(expect, k) is not None for k in keys)
    }
    for tag in host.tags:
        inside = own is not None and tag in own[0]
        others = [n for n in groups.members(tag) if n != host.name]
        if len(others) == 1:
            out += _pair(tag, others[0], mine, groups, done)
            continue
        if len(others) < 2:
            continue
        for trait in TRAITS:
            value = mine[trait]
            if trait in done or value is None:
                continue
            values = groups.counts(tag, trait)
            if inside and own is not None and (before := own[1][trait]) is not None:
                values[before] -= 1
            values[value] += 1
            values = +values  # drop the zero left by a changed value
            total = sum(values.values())
            common, n = values.most_common(1)[0]
            if n * 2 <= total or common == value:
                continue
            done.add(trait)
            count = n  # the majority holds no copy of this host's value
            label = _LABEL[trait]
            out.append(
                Finding(
                    Severity.WARN,
                    f"compare.{trait}",
                    f"{label} {value} here, {common} on {count} other"
                    f"{'s' if count != 1 else ''} tagged {tag!r}",
                    why="Hosts with the same tag are meant to be interchangeable; a different "
                    f"{label} behaves differently under the same launch command.",
                    fix=f"Bring this host's {label} in line with the group (or re-tag it).",
                    facts=_facts(tag, trait, value, values, total),
                )
            )
    return out


def _pair(
    tag: str, other: str, mine: dict[str, str | None], groups: Groups, done: set[str]
) -> list[Finding]:
    """Two hosts sharing `tag`: each trait both answered that differs, naming the other."""
    theirs = groups.member(other)
    if theirs is None:
        return []
    out = []
    for trait in TRAITS:
        here, there = mine[trait], theirs[1][trait]
        if trait in done or here is None or there is None or here == there:
            continue
        done.add(trait)
        label = _LABEL[trait]
        out.append(
            Finding(
                Severity.WARN,
                f"compare.{trait}",
                f"{label} {here} here, {there} on {other}, the other host tagged {tag!r}",
                why="Hosts with the same tag are meant to be interchangeable; a different "
                f"{label} behaves differently under the same launch command. With two hosts "
                "there is no majority: either may be the odd one.",
                fix=f"Bring the two hosts' {label} in line (or re-tag one, or set it in "
                f"[expect.{tag}] to say which is right).",
                facts={"tag": tag, "trait": trait, "here": here, "other": other, "there": there},
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
