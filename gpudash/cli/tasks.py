"""`gpudash tasks [HOST]` and `gpudash run TASK [HOST...]`: the task runner without a screen.

`run` streams `HOST | line` (progress bars collapsed to their last state per line) with a
`HOST | == task: state` line at each step; ctrl+c cancels on the hosts (a second one leaves
at once, the jobs then keep running and a later `run` attaches). Exit 0 only when every task
on every host succeeded or was skipped; 1 otherwise; 130 after a cancel; 2 for usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from gpudash.cli.errors import ExitCode, UsageError
from gpudash.cli.hosts import add_config_option, load, require_hosts
from gpudash.config.values import suggest

if TYPE_CHECKING:
    from gpudash.config.model import Config, HostConfig
    from gpudash.tasks.events import TaskEvent
    from gpudash.tasks.spec import TaskSpec


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tasks = sub.add_parser(
        "tasks", help="list the tasks; with HOST, whether each applies / is done there"
    )
    tasks.add_argument("host", nargs="?", metavar="HOST", help="check the tasks on this host")
    add_config_option(tasks)
    tasks.set_defaults(handler=tasks_command)

    run = sub.add_parser("run", help="run a task (after what it needs) on hosts")
    run.add_argument("task", metavar="TASK", help="a task name (see `gpudash tasks`)")
    run.add_argument(
        "hosts", nargs="*", metavar="HOST", help="hosts (default: every host it applies to)"
    )
    run.add_argument("-y", "--yes", action="store_true", help="run tasks marked confirm unasked")
    run.add_argument(
        "--show", action="store_true", help="print what would run (secrets masked), run nothing"
    )
    add_config_option(run)
    run.set_defaults(handler=run_command)


def _specs(config: Config) -> Mapping[str, TaskSpec]:
    from gpudash.tasks.spec import load_tasks

    return config.tasks or load_tasks()


def _task(specs: Mapping[str, TaskSpec], name: str) -> TaskSpec:
    if name not in specs:
        raise UsageError(f"unknown task {name!r}{suggest(name, list(specs))} (see `gpudash tasks`)")
    return specs[name]


# --- gpudash tasks -------------------------------------------------------------------------------


def tasks_command(args: argparse.Namespace, out: TextIO | None = None) -> ExitCode:
    out = out or sys.stdout
    config = load(args)
    specs = _specs(config)
    if args.host is None:
        rows: list[tuple[str, ...]] = [
            (s.key or "-", s.name, s.kind, ",".join(s.needs) or "-", s.title)
            for s in specs.values()
        ]
        _table(("KEY", "TASK", "KIND", "NEEDS", "TITLE"), rows, out)
        return ExitCode.OK
    (host,) = require_hosts(config, [args.host])
    states = asyncio.run(_host_states(config, host, specs))
    rows = [(s.key or "-", s.name, states[s.name], s.title) for s in specs.values()]
    _table(("KEY", "TASK", "STATE", "TITLE"), rows, out)
    failed = any(v.startswith("error") for v in states.values())
    return ExitCode.FAILED if failed else ExitCode.OK


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)]
        out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")
    out.flush()


async def _host_states(
    config: Config, host: HostConfig, specs: Mapping[str, TaskSpec]
) -> dict[str, str]:
    """Each task's state on `host`: n/a, running, done, to do, or last run's failure."""
    from gpudash.fleet import Fleet
    from gpudash.tasks import jobs
    from gpudash.tasks.fleet_run import host_facts
    from gpudash.tasks.prepare import Facts, PrepareError, prepare
    from gpudash.transport.base import TransportError

    states: dict[str, str] = {}
    async with Fleet(config) as fleet:
        transport = fleet.transport(host)
        try:
            await transport.connect()
            found = {j.task: j for j in await jobs.list_jobs(transport)}
        except TransportError as exc:
            return {name: f"error: {exc.reason}" for name in specs}
        facts: Facts | None = None
        if any(s.kind_def.needs_facts for s in specs.values()):
            facts = await host_facts(host, transport)

        async def one(spec: TaskSpec) -> None:
            job = found.get(spec.name)
            if not spec.applies_to(host):
                states[spec.name] = "n/a"
                return
            if job is not None and job.state == "running":
                states[spec.name] = "running"
                return
            try:
                prepared = prepare(spec, facts)
            except PrepareError as exc:
                states[spec.name] = f"blocked: {exc}"
                return
            last = ""
            if job is not None and job.state == "finished" and job.rc:
                last = f" (last run failed rc={job.rc})"
            elif job is not None and job.state in ("cancelled", "lost"):
                last = f" (last run {job.state})"
            if prepared.check is None:
                states[spec.name] = "no check" + last
                return
            try:
                process = await transport.start(prepared.check, timeout=60)
                try:
                    async for _ in process.chunks():
                        pass
                    code = await process.wait()
                finally:
                    await process.close()
            except TransportError as exc:
                states[spec.name] = f"error: {exc.reason}"
                return
            if code is None:
                states[spec.name] = "error: connection lost"
            else:
                states[spec.name] = "done" if code == 0 else "to do" + last

        await asyncio.gather(*(one(s) for s in specs.values()))
    return states


# --- gpudash run ---------------------------------------------------------------------------------


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> ExitCode:
    from gpudash.tasks.spec import order

    out = out or sys.stdout
    config = load(args)
    specs = _specs(config)
    spec = _task(specs, args.task)
    if args.hosts:
        hosts = require_hosts(config, args.hosts)
    else:
        hosts = [h for h in config.hosts if spec.applies_to(h)]
        if not hosts:
            raise UsageError(f"task {spec.name!r} applies to no configured host; name one")
    chain = order(specs, [spec.name])
    if args.show:
        return asyncio.run(_show(config, hosts, specs, chain, out))
    asking = [name for name in chain if specs[name].confirm]
    if asking and not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(
                f"{', '.join(asking)} asks for confirmation: pass --yes (or --show first)"
            )
        names = ", ".join(h.name for h in hosts)
        answer = input(f"run {' -> '.join(chain)} on {names}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            out.write("nothing run\n")
            return ExitCode.FAILED
    return asyncio.run(stream(config, hosts, specs, spec.name, out))


async def _show(
    config: Config,
    hosts: list[HostConfig],
    specs: Mapping[str, TaskSpec],
    chain: list[str],
    out: TextIO,
) -> ExitCode:
    from gpudash.fleet import Fleet
    from gpudash.tasks.fleet_run import host_facts
    from gpudash.tasks.prepare import Facts, PrepareError, prepare

    code = ExitCode.OK
    async with Fleet(config) as fleet:
        for host in hosts:
            facts: Facts | None = None
            for name in chain:
                spec = specs[name]
                if facts is None and spec.kind_def.needs_facts:
                    facts = await host_facts(host, fleet.transport(host))
                out.write(f"# ---- {host.name}: {name} ({spec.title})\n")
                try:
                    prepared = prepare(spec, facts)
                except PrepareError as exc:
                    out.write(f"# cannot run: {exc}\n")
                    code = ExitCode.FAILED
                    continue
                for note in prepared.notes:
                    out.write(f"# note: {note}\n")
                if prepared.check:
                    out.write(f"# check (exit 0 = already done): {(spec.check or '').strip()}\n")
                out.write(prepared.shown)
    out.flush()
    return code


async def stream(
    config: Config,
    hosts: list[HostConfig],
    specs: Mapping[str, TaskSpec],
    task: str,
    out: TextIO,
    *,
    cancel: asyncio.Event | None = None,
    root: str | None = None,
) -> ExitCode:
    """Run and print; the exit code. SIGINT sets `cancel` (the hosts stop the jobs)."""
    from gpudash.fleet import Fleet
    from gpudash.tasks.events import TaskOutput, is_end, succeeded
    from gpudash.tasks.fleet_run import run_tasks

    cancel = cancel or asyncio.Event()
    loop = asyncio.get_running_loop()

    def interrupted() -> None:
        if not cancel.is_set():
            sys.stderr.write("gpudash: cancelling on the hosts (ctrl+c again to leave now)\n")
            cancel.set()
            return
        loop.remove_signal_handler(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, interrupted)
    width = max(len(h.name) for h in hosts)
    ok = True
    try:
        async with Fleet(config) as fleet:
            async for event in run_tasks(fleet, specs, [task], hosts, cancel=cancel, root=root):
                line = _describe(event)
                if isinstance(event, TaskOutput):
                    for text in event.lines:
                        out.write(f"{event.host:<{width}} | {text}\n")
                elif line is not None:
                    out.write(f"{event.host:<{width}} | == {event.task}: {line}\n")
                if is_end(event) and not succeeded(event):
                    ok = False
                out.flush()
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)
    if cancel.is_set():
        return ExitCode.CANCELLED
    return ExitCode.OK if ok else ExitCode.FAILED


def _describe(event: TaskEvent) -> str | None:
    from gpudash.tasks import events as ev

    if isinstance(event, ev.TaskStarted):
        how = "attached to the run already going" if event.attached else "started"
        return f"{how} (run {event.run}; local log {event.log_path})"
    if isinstance(event, ev.TaskSkipped):
        return f"skipped: {event.reason}"
    if isinstance(event, ev.TaskBlocked):
        return f"not run: {event.reason}"
    if isinstance(event, ev.TaskFinished):
        if event.ok:
            return f"ok ({event.elapsed_s:.1f}s)"
        why = " (timed out)" if event.timed_out else ""
        return f"failed rc={event.rc}{why} ({event.elapsed_s:.1f}s)"
    if isinstance(event, ev.TaskCancelled):
        return "cancelled"
    if isinstance(event, ev.TaskLost):
        return f"lost: {event.reason}"
    return None
