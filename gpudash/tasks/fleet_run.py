"""Tasks and their needs on many hosts at once, as one stream of task events.

    run_tasks(fleet, specs, tasks, hosts, cancel=...)   every host in parallel
    run_on_host(host, transport, specs, tasks, ...)     one host: needs first, in order

A task whose need did not succeed is blocked, never run; each host runs its own sequence, so a
slow or failing host delays only itself. One task on one host is `gpudash.tasks.runner`'s (a
copy, which gpudash streams itself, is `gpudash.tasks.copy.kind`'s; a model copied from a
peer, `gpudash.tasks.copy.peer`'s).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from gpudash.aio import merge
from gpudash.tasks.events import (
    TaskBlocked,
    TaskCancelled,
    TaskEvent,
    TaskLost,
    TaskSkipped,
    is_end,
    succeeded,
)
from gpudash.tasks.kinds import HostGroup, RunContext, run_groups
from gpudash.tasks.prepare import Facts, PrepareError, prepare
from gpudash.tasks.refusals import needs_gpu, refusal
from gpudash.tasks.runner import run_task
from gpudash.tasks.spec import TaskSpec, order
from gpudash.transport.base import Transport

if TYPE_CHECKING:
    from gpudash.config.model import Config, HostConfig


class Hosts(Protocol):
    """What the fleet runner needs of `gpudash.fleet.Fleet`: its config and a transport per
    host (a Protocol, so this module does not import the orchestration above it)."""

    config: Config

    def transport(self, host: HostConfig) -> Transport: ...


async def host_facts(
    host: HostConfig, transport: Transport, specs: Iterable[TaskSpec] = ()
) -> Facts:
    """The probe sections the kinds of `specs` read (`Kind.facts_sections`; the gpus section
    when none is given), for defaults such as the torch CUDA tag."""
    from gpudash.host_probe import probe_host
    from gpudash.model import HostResult, apply
    from gpudash.probe.registry import section

    names = dict.fromkeys(n for spec in specs for n in spec.kind_def.facts_sections)
    result = HostResult(host.name)
    async for event in probe_host(host, transport, [section(n) for n in names or ("gpus",)]):
        result = apply(result, event)
    return Facts.from_result(result)


async def run_on_host(
    host: HostConfig,
    transport: Transport,
    specs: Mapping[str, TaskSpec],
    wanted: list[str],
    *,
    cancel: asyncio.Event | None = None,
    facts: Facts | None = None,
    root: str | None = None,
    environ: Mapping[str, str] | None = None,
    peer: Callable[[str], Transport | None] | None = None,
    keep_attached: bool = False,
    groups: Mapping[str, HostGroup] | None = None,
) -> AsyncIterator[TaskEvent]:
    """`wanted` and their needs on one host, needs first; a failed need blocks its dependents.

    `peer` gives another host's transport by name: a copy task's source. `keep_attached`:
    `cancel` only detaches from a run that was already going (`runner.run_task`). `groups`:
    per task, the run's hosts its kind runs together (`Kind.together`: a copy's fan-out).
    """
    name = host.name
    cancel = cancel or asyncio.Event()
    done: dict[str, bool] = {}
    names = order(specs, wanted)
    if needs_gpu(specs, wanted):  # refused up front, before its needs install anything
        if facts is None:
            facts = await host_facts(host, transport)
        why = refusal(specs, wanted, facts)
        if why is not None:
            for task in wanted:
                yield TaskBlocked(name, task, why)
            return
    for task in names:
        spec = specs[task]
        if cancel.is_set():
            yield TaskCancelled(name, task, 0.0)
            done[task] = False
            continue
        failed = [need for need in spec.needs if not done.get(need, False)]
        if failed:
            yield TaskBlocked(name, task, f"needs {', '.join(failed)}, which did not succeed")
            done[task] = False
            continue
        if task not in wanted and not spec.applies_to(host):
            yield TaskSkipped(name, task, "does not apply to this host")
            done[task] = True
            continue
        if facts is None and spec.kind_def.facts_needed(spec.params):
            facts = await host_facts(host, transport, (specs[t] for t in names))
        try:
            prepared = prepare(spec, facts, environ if environ is not None else os.environ)
        except PrepareError as exc:
            yield TaskBlocked(name, task, str(exc))
            done[task] = False
            continue
        run = spec.kind_def.run
        if run is not None:
            context = RunContext(
                name,
                transport,
                prepared,
                peer,
                cancel,
                root,
                keep_attached,
                (groups or {}).get(task),
            )
            stream = run(context)
        else:
            stream = run_task(
                name, transport, prepared, cancel=cancel, root=root, keep_attached=keep_attached
            )
        async for event in stream:
            if is_end(event):
                done[task] = succeeded(event)
            yield event


def fleet_peer(fleet: Hosts) -> Callable[[str], Transport | None]:
    """`run_on_host`'s `peer`: another configured host's transport, by name (a copy's source)."""

    def peer(name: str) -> Transport | None:
        other = fleet.config.host(name)
        return fleet.transport(other) if other is not None else None

    return peer


async def run_tasks(
    fleet: Hosts,
    specs: Mapping[str, TaskSpec],
    wanted: list[str],
    hosts: Iterable[HostConfig],
    *,
    cancel: asyncio.Event | None = None,
    root: str | None = None,
    keep_attached: bool = False,
) -> AsyncIterator[TaskEvent]:
    """`run_on_host` on every host at once, as one stream in arrival order."""
    cancel = cancel or asyncio.Event()
    peer = fleet_peer(fleet)
    hosts = list(hosts)
    groups = run_groups(specs, order(specs, wanted), [h.name for h in hosts])

    async def one(host: HostConfig) -> AsyncIterator[TaskEvent]:
        try:
            transport = fleet.transport(host)
            async for event in run_on_host(
                host,
                transport,
                specs,
                wanted,
                cancel=cancel,
                root=root,
                peer=peer,
                keep_attached=keep_attached,
                groups=groups,
            ):
                yield event
        except Exception as exc:  # a bug must cost one host, never the run
            reason = f"internal error: {type(exc).__name__}: {exc}"
            yield TaskLost(host.name, wanted[-1], reason)
        finally:  # a host that never reached its copy (a need failed) must not hold the rest
            for group in groups.values():
                group.withdraw(host.name)

    async for event in merge(one(h) for h in hosts):
        yield event
