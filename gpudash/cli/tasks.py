"""`gpudash tasks [HOST]`: each task, and with HOST whether it applies / is done there; and
the parsers of both task commands (`gpudash run` itself is `gpudash.cli.run`'s).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from gpudash.cli.errors import ExitCode
from gpudash.cli.hosts import add_config_option, add_selection, load, one_host
from gpudash.cli.run import run_command, specs_of

if TYPE_CHECKING:
    from gpudash.config.model import Config, HostConfig
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
        "hosts",
        nargs="*",
        metavar="HOST",
        help="names, globs, user@host[:port] (default: every host it applies to)",
    )
    add_selection(run, hosts=False)
    run.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="run unasked: on more than one host, and tasks marked confirm",
    )
    run.add_argument(
        "--follow",
        action="store_true",
        help="attach to the run going on the hosts; launch nothing, never cancel (ctrl+c leaves)",
    )
    run.add_argument(
        "--show", action="store_true", help="print what would run (secrets masked), run nothing"
    )
    add_config_option(run)
    run.set_defaults(handler=run_command)


# --- gpudash tasks -------------------------------------------------------------------------------


def tasks_command(args: argparse.Namespace, out: TextIO | None = None) -> ExitCode:
    out = out or sys.stdout
    config = load(args)
    specs = specs_of(config)
    if args.host is None:
        rows: list[tuple[str, ...]] = [
            (s.key or "-", s.name, s.kind, ",".join(s.needs) or "-", s.title)
            for s in specs.values()
        ]
        _table(("KEY", "TASK", "KIND", "NEEDS", "TITLE"), rows, out)
        return ExitCode.OK
    config, host = one_host(config, args.host)
    try:
        states = asyncio.run(_host_states(config, host, specs))
    except _Unreachable as exc:  # one line, not the same error in every task's row
        out.write(f"{host.name}: cannot connect: {exc.reason.removeprefix(host.name + ': ')}\n")
        out.flush()
        return ExitCode.FAILED
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


class _Unreachable(Exception):
    """The host did not answer: no task's state can be known there."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
            raise _Unreachable(exc.reason) from None
        facts: Facts | None = None
        if any(s.kind_def.facts_needed(s.params) for s in specs.values()):
            facts = await host_facts(host, transport, specs.values())

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
