"""Tag groups: per tag, which value of each compared trait most of its hosts hold.

Its own module so that the Fleet (which keeps one `Groups` for a whole run and moves it host
by host) and the compare check (which reads it) share it without the Fleet importing a check.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpudash.checks.context import Context
from gpudash.model import HostResult, HostState

if TYPE_CHECKING:
    from gpudash.config.model import HostConfig

TRAITS = ("gpus", "gpu_model", "driver", "cuda", "nvcc", "torch", "nvlink")


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


def comparable(result: HostResult) -> bool:
    """Whether a host counts towards its groups' majorities: it answered this round."""
    return result.state is not HostState.FAILED and bool(result.sections)


Majority = tuple[str, int] | None
"""A group's strict-majority value of one trait and how many hold it; None when none."""


class Groups:
    """Per tag, how many comparable hosts hold each value of each trait.

    Built once and shared by every host's check, so comparing a fleet costs one pass over
    its hosts rather than one per host (which was O(N²) trait extractions). `update` moves a
    single host's contribution when its result changes and returns the hosts whose
    comparison may have changed with it: the Fleet re-checks only those after each host's
    round instead of every host sharing a tag.
    """

    def __init__(self) -> None:
        self._members: dict[str, tuple[tuple[str, ...], dict[str, str | None]]] = {}
        self._outside: dict[str, set[str]] = {}  # per tag: hosts with data that did not answer
        # tag -> trait -> value -> hosts holding it; trait "" (value "") lists the members
        self._holders: dict[str, dict[str, dict[str, set[str]]]] = {}

    @classmethod
    def of(cls, hosts: Iterable[tuple[HostConfig, HostResult]]) -> Groups:
        groups = cls()
        for host, result in hosts:
            groups.update(host.name, host.tags, result)
        return groups

    def size(self, tag: str) -> int:
        return len(self._holders.get(tag, {}).get("", {}).get("", ()))

    def members(self, tag: str) -> list[str]:
        """The comparable hosts tagged `tag`, sorted by name."""
        return sorted(self._holders.get(tag, {}).get("", {}).get("", ()))

    def counts(self, tag: str, trait: str) -> Counter[str]:
        held = self._holders.get(tag, {}).get(trait, {})
        return Counter({value: len(names) for value, names in held.items() if names})

    def member(self, name: str) -> tuple[tuple[str, ...], dict[str, str | None]] | None:
        return self._members.get(name)

    def majority(self, tag: str, trait: str) -> Majority:
        """The value most members hold, when more than half hold it and the group has at
        least three members (so each has a majority of at least two others to differ from)."""
        if self.size(tag) < 3:
            return None
        values = self.counts(tag, trait)
        if not values:
            return None
        common, n = values.most_common(1)[0]
        return (common, n) if n * 2 > sum(values.values()) else None

    def update(self, name: str, tags: Iterable[str], result: HostResult | None) -> set[str]:
        """Replace `name`'s contribution with `result`'s (None: forget the host); the
        other hosts whose comparison findings may differ now."""
        tags = tuple(tags)
        old = self._members.pop(name, None)
        touched = set(tags) | set(old[0] if old else ())
        before = {t: self._state(t) for t in touched}
        size_before = {t: self.size(t) for t in touched}
        if old is not None:
            for tag in old[0]:
                for trait, value in [("", ""), *old[1].items()]:
                    if value is not None:
                        self._holders[tag][trait][value].discard(name)
        for tag in touched:
            self._outside.get(tag, set()).discard(name)
        if result is not None and comparable(result):
            mine = traits(result)
            self._members[name] = (tags, mine)
            for tag in tags:
                for trait, value in [("", ""), *mine.items()]:
                    if value is not None:
                        held = self._holders.setdefault(tag, {}).setdefault(trait, {})
                        held.setdefault(value, set()).add(name)
        elif result is not None and result.sections:
            for tag in tags:
                self._outside.setdefault(tag, set()).add(name)
        affected: set[str] = set()
        for tag in touched:
            after = self._state(tag)
            for trait in TRAITS:
                (counts_was, was), (counts_now, now) = before[tag][trait], after[trait]
                if counts_was == counts_now and was == now:
                    continue
                held = self._holders.get(tag, {}).get(trait, {})
                flipped = (was and was[0]) != (now and now[0])
                paired = self.size(tag) <= 2 or size_before[tag] <= 2
                for value, names in held.items():
                    # a new majority value (or none) can flip anyone; otherwise only the
                    # odd ones' findings change (they quote the group's counts); in a pair
                    # (before or after) each host's finding names the other's value
                    if flipped or paired or (now is not None and value != now[0]):
                        affected |= names
                affected |= self._outside.get(tag, set())
        affected.discard(name)
        return affected

    def _state(self, tag: str) -> dict[str, tuple[Counter[str], Majority]]:
        return {t: (self.counts(tag, t), self.majority(tag, t)) for t in TRAITS}
