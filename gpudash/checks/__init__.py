"""Findings: what is wrong with a host, why it matters, and the task (and key) that fixes it.

Every check is a pure function of one host's probe results (plus, for comparisons, the other
hosts' results and the config); nothing here connects, prints or imports the screen.

    run_checks(result, host=None, peers=(), tasks=None) -> tuple[Finding, ...]   worst first
    check_fleet(config, results)                        -> {host: tuple[Finding, ...]}
    worst_severity(findings), counts(findings)          what a host-list row shows
    FindingsComputed(host, findings)                    the core event carrying them

Check families, one module each, listed once in FAMILIES: `driver` (driver vs toolkit),
`wheels` (torch/FlashInfer vs driver and GPU arch), `nvlink`, `gpus`, `health` (Xids, clock
slowdowns, PCIe links, memory errors, lost GPUs, fabric manager, RDMA), `disk`, `network`,
`env`, `expect` (the config's `expect` tables), `compare` (hosts sharing a tag), `verify`
(what the verify task measured) and `serve` (served engines). Each family that had data
to look at and found nothing wrong says so with one `ok` finding, so a report shows what was
checked.
`Finding` and `Severity` live in `finding`, the tag groups `compare` reads in `groups`, what
every check reads in `context`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gpudash.checks.finding import (
    Finding,
    Severity,
    check_error,
    counts,
    problems,
    sort_findings,
    worst_severity,
)
from gpudash.model import FindingsComputed, HostResult, HostState

FAMILIES = (
    "gpus", "health", "driver", "wheels", "nvlink", "disk", "network", "env", "expect",
    "compare", "verify", "serve",
)  # fmt: skip
"""The check families, in the order they run: the one list of them. Each is the module
`gpudash.checks.NAME` with `check(ctx) -> list[Finding]`; imported on the first check, so
loading gpudash.checks costs nothing (bench/import_graph.py)."""

if TYPE_CHECKING:
    from gpudash.checks.groups import Groups
    from gpudash.config.model import Config, HostConfig
    from gpudash.tasks.spec import TaskSpec


def run_checks(
    result: HostResult,
    host: HostConfig | None = None,
    peers: Sequence[tuple[HostConfig, HostResult]] = (),
    tasks: Mapping[str, TaskSpec] | None = None,
    groups: Groups | None = None,
) -> tuple[Finding, ...]:
    """Every check over one host, worst first.

    `host` is its config (expectations, tags, model dirs); `peers` the other hosts' configs
    and results, compared with this one where they share a tag; `tasks` the config's task
    specs (`Config.tasks`), from which each finding's `fix_key` is taken (the built-in task
    table when None); `groups` replaces `peers` with majorities computed once for a whole
    fleet.

    Total: a check family that raises leaves one `check.error` finding naming it, and the
    other families still run, so one bug costs one verdict, never the host or the fleet."""
    from gpudash.checks.context import Context
    from gpudash.checks.fixes import task_keys

    found: list[Finding] = []
    try:
        ctx = Context.build(result, host, peers, groups)
    except Exception as exc:
        return (check_error("context", exc),)
    if result.state is HostState.FAILED:
        # the transport's error names the host ("h1: connection refused"); the finding is
        # listed under that name already
        error = (result.error or "probe failed").removeprefix(f"{result.name}: ")
        found.append(
            Finding(
                Severity.FAIL,
                "host.unreachable",
                f"host did not answer: {error}",
                why="Nothing can be checked on a host that cannot be probed.",
                fix="Check the address, SSH access and that the host is up, then re-probe.",
                facts={"error": result.error},
            )
        )
    else:
        found.extend(ctx.section_notes())
    if ctx.any_data:
        for name in FAMILIES:
            try:
                family = importlib.import_module(f"gpudash.checks.{name}")
                found.extend(family.check(ctx))
            except Exception as exc:
                found.append(check_error(name, exc))
    keys = task_keys(tasks)
    found = [replace(f, fix_key=keys.get(f.fix_task)) if f.fix_task else f for f in found]
    return sort_findings(found)


def check_fleet(
    config: Config, results: Mapping[str, HostResult], names: Iterable[str] | None = None
) -> dict[str, tuple[Finding, ...]]:
    """Findings for the named (default: all) configured hosts that have a result, each
    compared with every other host in `results` that shares a tag with it."""
    from gpudash.checks.groups import Groups

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
