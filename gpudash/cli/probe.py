"""`gpudash probe [HOST...]` without a screen: a readable line per section as it arrives, or
one JSON document; `--save DIR` keeps each host's raw outputs, `--replay DIR` shows them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TextIO

from gpudash.cli.errors import ExitCode, UsageError
from gpudash.cli.hosts import add_config_option, load, replay_config, require_hosts
from gpudash.config.model import Config
from gpudash.fleet import Fleet
from gpudash.model import Event, HostResult, HostState, HostStateChanged, ProbeFinished, SectionDone
from gpudash.saved import save_host
from gpudash.summary import section_line


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    probe = sub.add_parser("probe", help="probe hosts and print what they have")
    probe.add_argument("hosts", nargs="*", metavar="HOST", help="hosts to probe (default: all)")
    probe.add_argument("--json", action="store_true", help="print one JSON document")
    probe.add_argument("--save", metavar="DIR", help="write each host's raw outputs to DIR/HOST/")
    probe.add_argument("--replay", metavar="DIR", help="show a --save directory, no connecting")
    add_config_option(probe)
    probe.set_defaults(handler=_probe)


def _probe(args: argparse.Namespace) -> ExitCode:
    config = replay_config(Path(args.replay)) if args.replay else load(args)
    require_hosts(config, args.hosts)
    save = Path(args.save) if args.save else None
    if save is not None:
        try:  # before connecting anywhere: a bad --save must not cost a whole probe round
            save.mkdir(mode=0o700, parents=True, exist_ok=True)
            probe_file = save / ".gpudash-write-test"
            probe_file.touch()
            probe_file.unlink()
        except OSError as exc:
            raise UsageError(f"--save {save}: {exc.strerror or exc}") from None
    return asyncio.run(probe_command(config, args.hosts or None, as_json=args.json, save=save))


async def probe_command(
    config: Config,
    names: list[str] | None,
    *,
    as_json: bool,
    save: Path | None,
    out: TextIO | None = None,
) -> ExitCode:
    """Probe `names` (default: all), print as the events come, and return FAILED when any
    host did not answer."""
    out = out or sys.stdout
    async with Fleet(config, findings=False) as fleet:
        hosts = fleet.hosts(names)
        width = max((len(h.name) for h in hosts), default=4)
        async for event in fleet.probe(names):
            snapshot = fleet.results[event.host]  # the fleet folded `event` in already
            if not as_json:
                _print_event(event, snapshot, width, out)
            if isinstance(event, ProbeFinished) and save is not None:
                save_host(save, snapshot)
        results = [fleet.results.get(h.name) or HostResult(h.name) for h in hosts]
    if as_json:
        json.dump({"hosts": [r.to_json() for r in results]}, out, indent=2)
        out.write("\n")
    else:
        _print_totals(results, out)
    out.flush()
    failed = any(r.state is not HostState.READY for r in results)
    return ExitCode.FAILED if failed else ExitCode.OK


def _print_event(event: Event, snap: HostResult, width: int, out: TextIO) -> None:
    prefix = f"{snap.name:<{width}} │ "
    if isinstance(event, SectionDone):
        if snap.state is HostState.FAILED or (event.result.error and not event.result.parts):
            return  # a section that never came: the host line below says why
        out.write(f"{prefix}{event.result.name:<8} {section_line(event.result)}\n")
    elif isinstance(event, HostStateChanged) and event.state is HostState.FAILED:
        out.write(f"{prefix}FAILED   {event.reason}\n")
    if isinstance(event, HostStateChanged):
        for note in event.notes:  # how the probe ran there (no `timeout` on PATH, ...)
            out.write(f"{prefix}note     {note}\n")
    out.flush()


def _print_totals(results: list[HostResult], out: TextIO) -> None:
    ready = sum(r.state is HostState.READY for r in results)
    failed = [r for r in results if r.state is not HostState.READY]
    line = f"{ready} of {len(results)} hosts answered"
    if failed:
        line += "; failed: " + ", ".join(f"{r.name} ({r.error})" for r in failed)
    out.write(line + "\n")
