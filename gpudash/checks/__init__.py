"""Findings: what is wrong with a host, why it matters, and the task (and key) that fixes it.

Every check is a pure function of one host's probe results (plus, for comparisons, the other
hosts' results and the config); nothing here connects, prints or imports the screen.

    run_checks(result, host=None, peers=(), tasks=None) -> tuple[Finding, ...]   worst first
    check_fleet(config, results)                        -> {host: tuple[Finding, ...]}
    worst_severity(findings), counts(findings)          what a host-list row shows
    FindingsComputed(host, findings)                    the core event carrying them

Check families, one module each: `driver` (driver vs toolkit), `wheels` (torch/FlashInfer vs
driver and GPU arch), `nvlink`, `gpus`, `disk`, `network`, `env`, `expect` (the config's
`expect` tables) and `compare` (hosts sharing a tag). Each family that had data to look at and
found nothing wrong says so with one `ok` finding, so a report shows what was checked.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpudash.model import FindingsComputed, HostResult, HostState, to_jsonable

if TYPE_CHECKING:
    from gpudash.config.model import Config, HostConfig


class Severity(str, enum.Enum):
    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.OK: 0, Severity.INFO: 1, Severity.WARN: 2, Severity.FAIL: 3}


@dataclass(frozen=True)
class Finding:
    """One verdict about a host.

    `code` is short and stable (`driver.too_old_for_nvcc`): scripts and tests key on it.
    `facts` are the values behind the verdict, as probed (already cleaned of control
    characters by the parsers, but still remote text: escape it for Markdown or markup).
    `fix_task` names the bootstrap task that fixes it, `fix_key` the app key that runs that
    task (from the config's task table), `fix_params` the task parameters the fix needs
    (e.g. the model `repo`)."""

    severity: Severity
    code: str
    title: str
    why: str = ""
    fix: str = ""
    facts: Mapping[str, Any] = field(default_factory=dict)
    fix_task: str | None = None
    fix_key: str | None = None
    fix_params: Mapping[str, str] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.code.split(".", 1)[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity.value,
            "code": self.code,
            "title": self.title,
            "why": self.why,
            "fix": self.fix,
            "facts": to_jsonable(dict(self.facts)),
            "fix_task": self.fix_task,
            "fix_key": self.fix_key,
            "fix_params": dict(self.fix_params),
        }


def worst_severity(findings: Iterable[Finding]) -> Severity | None:
    """The worst severity among `findings`; None when there are none at all."""
    worst: Severity | None = None
    for finding in findings:
        if worst is None or finding.severity.rank > worst.rank:
            worst = finding.severity
    return worst


def counts(findings: Iterable[Finding]) -> dict[Severity, int]:
    """How many findings of each severity, every severity present as a key."""
    out = dict.fromkeys(Severity, 0)
    for finding in findings:
        out[finding.severity] += 1
    return out


def problems(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """The findings worth a user's attention: warn and fail (info and ok are context)."""
    return tuple(f for f in findings if f.severity.rank >= Severity.WARN.rank)


def sort_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Worst first; within a severity, in the order the checks produced them."""
    return tuple(sorted(findings, key=lambda f: -f.severity.rank))


def run_checks(
    result: HostResult,
    host: HostConfig | None = None,
    peers: Sequence[tuple[HostConfig, HostResult]] = (),
    tasks: Mapping[str, Any] | None = None,
    groups: Any = None,
) -> tuple[Finding, ...]:
    """Every check over one host, worst first.

    `host` is its config (expectations, tags, model dirs); `peers` the other hosts' configs
    and results, compared with this one where they share a tag; `tasks` the config's task
    specs (`Config.tasks`), from which each finding's `fix_key` is taken (the built-in task
    table when None); `groups` (a `compare.Groups`) replaces `peers` with majorities
    computed once for a whole fleet."""
    from gpudash.checks import compare, disk, driver, env, expect, gpus, network, nvlink, wheels
    from gpudash.checks.context import Context
    from gpudash.checks.fixes import task_keys

    ctx = Context.build(result, host, peers, groups)
    found: list[Finding] = []
    if result.state is HostState.FAILED:
        found.append(
            Finding(
                Severity.FAIL,
                "host.unreachable",
                f"host did not answer: {result.error or 'probe failed'}",
                why="Nothing can be checked on a host that cannot be probed.",
                fix="Check the address, SSH access and that the host is up, then re-probe.",
                facts={"error": result.error},
            )
        )
    else:
        found.extend(ctx.section_notes())
    if ctx.any_data:
        for family in (gpus, driver, wheels, nvlink, disk, network, env, expect, compare):
            found.extend(family.check(ctx))
    keys = task_keys(tasks)
    found = [replace(f, fix_key=keys.get(f.fix_task)) if f.fix_task else f for f in found]
    return sort_findings(found)


def check_fleet(
    config: Config, results: Mapping[str, HostResult], names: Iterable[str] | None = None
) -> dict[str, tuple[Finding, ...]]:
    """Findings for the named (default: all) configured hosts that have a result, each
    compared with every other host in `results` that shares a tag with it."""
    from gpudash.checks.compare import Groups

    wanted = set(names) if names is not None else None
    hosts = [h for h in config.hosts if h.name in results]
    groups = Groups.of((h, results[h.name]) for h in hosts)  # once, not once per host
    out: dict[str, tuple[Finding, ...]] = {}
    for host in hosts:
        if wanted is not None and host.name not in wanted:
            continue
        out[host.name] = run_checks(results[host.name], host, (), config.tasks, groups)
    return out


__all__ = [
    "Finding",
    "FindingsComputed",
    "Severity",
    "check_fleet",
    "counts",
    "problems",
    "run_checks",
    "sort_findings",
    "worst_severity",
]
