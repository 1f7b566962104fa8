"""`gpudash stop TASK HOST...`: stop a detached run of any task, and the service it left.

On each host at once: the run still going is cancelled (TERM to its process group, KILL
after `--grace`), and the group recorded in the job's `service.pgid` (a served engine left
running on purpose) is stopped the same way; then the GPU memory those processes held must
be gone from `nvidia-smi --query-compute-apps` (`gpudash.tasks.stop`). One line per host, as
each host finishes: a slow or unreachable host never holds the others' lines.

Exit 0 when something was running on every host and all of it stopped (GPU memory freed
where nvidia-smi could say); 1 when a host had nothing running, could not be reached, or
something survived or still holds GPU memory; 2 for an unknown task, host or tag.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, TextIO

from gpudash.cli.errors import ExitCode, UsageError
from gpudash.cli.hosts import add_config_option, add_selection, load, select_hosts
from gpudash.cli.run import specs_of, task_named

if TYPE_CHECKING:
    from gpudash.config.model import Config, HostConfig
    from gpudash.tasks.stop import StopResult


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    stop = sub.add_parser(
        "stop", help="stop a task's detached run (and the service it left running) on hosts"
    )
    stop.add_argument("task", metavar="TASK", help="a task name (see `gpudash tasks`)")
    stop.add_argument(
        "hosts", nargs="*", metavar="HOST", help="names, globs, user@host[:port] (no default)"
    )
    add_selection(stop, hosts=False)
    stop.add_argument(
        "--grace",
        type=_seconds,
        default=10.0,
        metavar="S",
        help="seconds between TERM and KILL (default 10)",
    )
    add_config_option(stop)
    stop.set_defaults(handler=stop_command)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds, e.g. 10") from None
    if not 0 < value <= 600:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0 < S <= 600")
    return value


def stop_command(args: argparse.Namespace, out: TextIO | None = None) -> ExitCode:
    out = out or sys.stdout
    config = load(args)
    spec = task_named(specs_of(config), args.task)
    if not args.hosts and not args.tags:
        raise UsageError(f"name the hosts to stop {spec.name!r} on (HOST... or --tag TAG)")
    config, hosts = select_hosts(config, args.hosts, args.tags)
    return asyncio.run(stop_on(config, hosts, spec.name, out, grace=args.grace))


async def stop_on(
    config: Config,
    hosts: list[HostConfig],
    task: str,
    out: TextIO,
    *,
    grace: float = 10.0,
    root: str | None = None,
    gpu_wait: int | None = None,
) -> ExitCode:
    """Stop `task` on every host at once; print each host's line as it finishes."""
    from gpudash.fleet import Fleet
    from gpudash.tasks.stop import GPU_WAIT_S, describe, stop

    width = max(len(h.name) for h in hosts)
    ok = True
    async with Fleet(config) as fleet:
        pending = [
            stop(
                h.name,
                fleet.transport(h),
                task,
                grace=grace,
                root=root,
                gpu_wait=GPU_WAIT_S if gpu_wait is None else gpu_wait,
            )
            for h in hosts
        ]
        for next_done in asyncio.as_completed(pending):
            result: StopResult = await next_done
            ok = ok and result.ok
            out.write(f"{result.host:<{width}} | == {task}: {describe(result)}\n")
            out.flush()
    return ExitCode.OK if ok else ExitCode.FAILED
