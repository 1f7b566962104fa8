"""`gpudash run TASK [HOST...]`: the task runner without a screen (`gpudash.cli.tasks` holds
its parser and `gpudash tasks`).

`run` streams `HOST | line` (progress bars collapsed to their last state per line) with a
`HOST | == task: state` line at each step. Its first line on a host says what ctrl+c does
there: a run this command started is cancelled on the host; a run that was already going
(started from the dashboard, another terminal, a lost session) was only attached to, and
ctrl+c detaches from it and leaves it running: attaching never cancels. `--follow` attaches
to what is running and never launches or cancels anything. A second ctrl+c leaves at once
(the jobs then keep running and a later `run` attaches).

A task on more than one host asks first, listing the hosts, when stdin is a terminal; with
no terminal to ask on it refuses (exit 2) unless `--yes` says so: a script that meant one
host must not reach the fleet because a tag or the config grew.

Exit 0 only when every task on every host succeeded or was skipped; 1 otherwise; 130 after
ctrl+c (cancelled or detached); 2 for usage errors and an unconfirmed run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, TextIO

from gpudash.cli.errors import ExitCode, UsageError
from gpudash.cli.hosts import load, select_hosts
from gpudash.config.values import suggest

if TYPE_CHECKING:
    from gpudash.config.model import Config, HostConfig
    from gpudash.tasks.events import TaskEvent
    from gpudash.tasks.spec import TaskSpec
    from gpudash.transport.base import Transport


def specs_of(config: Config) -> Mapping[str, TaskSpec]:
    from gpudash.tasks.spec import load_tasks

    return config.tasks or load_tasks()


def task_named(specs: Mapping[str, TaskSpec], name: str) -> TaskSpec:
    if name not in specs:
        raise UsageError(f"unknown task {name!r}{suggest(name, list(specs))} (see `gpudash tasks`)")
    return specs[name]


# --- gpudash run ---------------------------------------------------------------------------------


def run_command(args: argparse.Namespace, out: TextIO | None = None) -> ExitCode:
    try:
        return _run_command(args, out)
    except _Declined:
        return ExitCode.FAILED


def _run_command(args: argparse.Namespace, out: TextIO | None = None) -> ExitCode:
    from gpudash.tasks.spec import order

    out = out or sys.stdout
    config = load(args)
    specs = specs_of(config)
    spec = task_named(specs, args.task)
    if args.hosts or args.tags:
        config, hosts = select_hosts(
            config, args.hosts, args.tags, accept_new=args.accept_new_host_key
        )
    else:
        hosts = [h for h in config.hosts if spec.applies_to(h)]
        if not hosts:
            raise UsageError(f"task {spec.name!r} applies to no configured host; name one")
    if args.follow:
        return asyncio.run(follow(config, hosts, spec.name, out))
    chain = order(specs, [spec.name])
    if args.show:
        return asyncio.run(_show(config, hosts, specs, chain, out))
    asking = [name for name in chain if specs[name].confirm]
    if not args.yes and (asking or len(hosts) > 1):
        _confirm(chain, asking, hosts, out)
    return asyncio.run(stream(config, hosts, specs, spec.name, out))


def _confirm(chain: list[str], asking: list[str], hosts: list[HostConfig], out: TextIO) -> None:
    """Ask on the terminal before a task marked confirm or a run on more than one host;
    without a terminal, refuse (UsageError) naming what `--yes` would allow."""
    names = ", ".join(h.name for h in hosts)
    why = []
    if asking:
        why.append(f"{', '.join(asking)} asks for confirmation")
    if len(hosts) > 1:
        why.append(f"it runs on {len(hosts)} hosts ({names})")
    if not sys.stdin.isatty():
        raise UsageError(f"{'; '.join(why)}: pass --yes (or --show first)")
    out.write(f"run {' -> '.join(chain)} on {len(hosts)} host(s): {names}\n")
    out.flush()
    answer = input("go ahead? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        out.write("nothing run\n")
        out.flush()
        raise _Declined


class _Declined(Exception):
    """The user said no at the prompt (exit 1, nothing run)."""


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
                if facts is None and spec.kind_def.facts_needed(spec.params):
                    facts = await host_facts(host, fleet.transport(host), (specs[n] for n in chain))
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


class _Interrupts:
    """ctrl+c during a run: the first sets `stop` (started runs are cancelled on the hosts,
    attached ones detached) and says which hosts get which; a second leaves at once."""

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop
        self.started: dict[str, str] = {}  # host -> task this command launched, still going
        self.attached: dict[str, str] = {}  # host -> task only attached to, still going

    def seen(self, event: TaskEvent) -> None:
        from gpudash.tasks.events import TaskStarted, is_end

        if isinstance(event, TaskStarted):
            (self.attached if event.attached else self.started)[event.host] = event.task
        elif is_end(event):
            self.started.pop(event.host, None)
            self.attached.pop(event.host, None)

    def message(self) -> str:
        said = []
        if self.started:
            said.append(f"cancelling what this command started on {', '.join(self.started)}")
        if self.attached:
            said.append(f"leaving the runs on {', '.join(self.attached)} running (detached)")
        if not said:
            said.append("stopping (nothing launched yet is started)")
        return f"gpudash: {'; '.join(said)} (ctrl+c again to leave now)\n"

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        def interrupted() -> None:
            if not self.stop.is_set():
                sys.stderr.write(self.message())
                self.stop.set()
                return
            loop.remove_signal_handler(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, interrupted)

    @staticmethod
    def remove(loop: asyncio.AbstractEventLoop) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)


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
    """Run and print; the exit code. SIGINT sets `cancel`: the runs this command started are
    cancelled on the hosts, the runs it attached to are left running (TaskDetached)."""
    from gpudash.fleet import Fleet
    from gpudash.tasks.fleet_run import run_tasks

    cancel = cancel or asyncio.Event()
    loop = asyncio.get_running_loop()
    interrupts = _Interrupts(cancel)
    interrupts.install(loop)
    printer = _Printer(hosts, out)
    try:
        async with Fleet(config) as fleet:
            events = run_tasks(
                fleet, specs, [task], hosts, cancel=cancel, root=root, keep_attached=True
            )
            async for event in events:
                interrupts.seen(event)
                printer.print(event)
    finally:
        interrupts.remove(loop)
    if cancel.is_set():
        return ExitCode.CANCELLED
    return ExitCode.OK if printer.ok else ExitCode.FAILED


async def follow(
    config: Config,
    hosts: list[HostConfig],
    task: str,
    out: TextIO,
    *,
    stop: asyncio.Event | None = None,
    root: str | None = None,
) -> ExitCode:
    """`run --follow`: the run of `task` going on each host, followed to its end; nothing
    launched, nothing cancelled (ctrl+c detaches). A host where it is not running says so
    (and its last run's end) and counts as a failure for the exit code."""
    from gpudash.aio import merge
    from gpudash.fleet import Fleet
    from gpudash.tasks import jobs
    from gpudash.tasks.runner import detach_on, follow_job
    from gpudash.transport.base import TransportError

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    interrupts = _Interrupts(stop)
    interrupts.install(loop)
    printer = _Printer(hosts, out)

    async def one(host: HostConfig, transport: Transport) -> AsyncIterator[TaskEvent | str]:
        try:
            await transport.connect()
            status = await jobs.status(transport, task, root=root)
        except TransportError as exc:
            yield f"{host.name}: cannot follow: {exc.reason}"
            return
        if status.state != "running":
            last = "" if status.state == "none" else f" (last run: {status.state}"
            if last and status.rc is not None:
                last += f" rc={status.rc}"
            yield f"{host.name}: {task} is not running{last + ')' if last else ''}"
            return
        followed = follow_job(host.name, transport, task, run=status.run, root=root)
        async for event in detach_on(stop, followed, host.name, task, status.run):
            yield event

    try:
        async with Fleet(config) as fleet:
            streams = [one(h, fleet.transport(h)) for h in hosts]
            async for item in merge(streams):
                if isinstance(item, str):
                    host, _, text = item.partition(": ")
                    printer.line(host, f"== {text}")
                    printer.ok = False
                    continue
                interrupts.seen(item)
                printer.print(item, following=True)
    finally:
        interrupts.remove(loop)
    if stop.is_set():
        return ExitCode.CANCELLED
    return ExitCode.OK if printer.ok else ExitCode.FAILED


class _Printer:
    """`HOST | line` for output, `HOST | == task: state` for each step; `ok` until a task
    ends other than succeeded or skipped."""

    def __init__(self, hosts: list[HostConfig], out: TextIO) -> None:
        self.width = max(len(h.name) for h in hosts)
        self.out = out
        self.ok = True

    def line(self, host: str, text: str) -> None:
        self.out.write(f"{host:<{self.width}} | {text}\n")
        self.out.flush()

    def print(self, event: TaskEvent, *, following: bool = False) -> None:
        from gpudash.tasks.events import TaskOutput, is_end, succeeded

        if isinstance(event, TaskOutput):
            for text in event.lines:
                self.out.write(f"{event.host:<{self.width}} | {text}\n")
        else:
            said = _describe(event, following=following)
            if said is not None:
                self.out.write(f"{event.host:<{self.width}} | == {event.task}: {said}\n")
        if is_end(event) and not succeeded(event):
            self.ok = False
        self.out.flush()


def _describe(event: TaskEvent, *, following: bool = False) -> str | None:
    from gpudash.tasks import events as ev

    if isinstance(event, ev.TaskStarted):
        if following:
            how = "following the run going on the host; ctrl+c leaves it running"
        elif event.attached:
            how = "attached to the run already going; ctrl+c leaves it running"
        else:
            how = "started; ctrl+c cancels it"
        return f"{how} (run {event.run}; local log {event.log_path})"
    if isinstance(event, ev.TaskDetached):
        again = f"gpudash run --follow {event.task} {event.host}"
        return f"left running on {event.host} (run {event.run}); `{again}` follows it again"
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
    if isinstance(event, ev.TaskNotConnected):
        return f"failed: cannot connect: {event.cause}"
    if isinstance(event, ev.TaskLost):
        return f"lost: {event.reason}"
    return None
