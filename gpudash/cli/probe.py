"""`gpudash probe` without a screen: stream a readable line per section, or one JSON document."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from gpudash.config.model import Config, HostConfig
from gpudash.fleet import Fleet
from gpudash.model import HostResult, HostState, HostStateChanged, ProbeFinished, SectionDone, apply
from gpudash.saved import load_host, save_host, saved_hosts
from gpudash.summary import section_line


def replay_config(root: Path) -> Config:
    """One replay host per saved host directory under `root`."""
    from gpudash.cli.main import UsageError

    if not root.is_dir():
        raise UsageError(f"{root}: no such directory (expected a `gpudash probe --save` dir)")
    dirs = saved_hosts(root)
    if not dirs:
        raise UsageError(f"{root}: no saved hosts in it (no */meta.json)")
    hosts = []
    for directory in dirs:
        try:
            name = load_host(directory).host
        except (OSError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        hosts.append(
            HostConfig(name=name, transport="replay", address=name, replay_dir=str(directory))
        )
    return Config(path=str(root), hosts=tuple(hosts))


async def probe_command(
    config: Config,
    names: list[str] | None,
    *,
    as_json: bool,
    save: Path | None,
    out: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    snapshots: dict[str, HostResult] = {}
    async with Fleet(config, findings=False) as fleet:
        hosts = fleet.hosts(names)
        snapshots = {h.name: HostResult(h.name) for h in hosts}
        width = max((len(h.name) for h in hosts), default=4)
        async for event in fleet.probe(names):
            snapshots[event.host] = apply(snapshots[event.host], event)
            if not as_json:
                _print_event(event, snapshots[event.host], width, out)
            if isinstance(event, ProbeFinished) and save is not None:
                save_host(save, snapshots[event.host])
    results = [snapshots[h.name] for h in hosts]
    if as_json:
        json.dump({"hosts": [r.to_json() for r in results]}, out, indent=2)
        out.write("\n")
    else:
        _print_totals(results, out)
    out.flush()
    failed = any(r.state is not HostState.READY for r in results)
    return 1 if failed else 0


def _print_event(event: object, snap: HostResult, width: int, out: TextIO) -> None:
    prefix = f"{snap.name:<{width}} │ "
    if isinstance(event, SectionDone):
        if snap.state is HostState.FAILED or (event.result.error and not event.result.parts):
            return  # a section that never came: the host line below says why
        out.write(f"{prefix}{event.result.name:<8} {section_line(event.result)}\n")
    elif isinstance(event, HostStateChanged) and event.state is HostState.FAILED:
        out.write(f"{prefix}FAILED   {event.reason}\n")
    out.flush()


def _print_totals(results: list[HostResult], out: TextIO) -> None:
    ready = sum(r.state is HostState.READY for r in results)
    failed = [r for r in results if r.state is not HostState.READY]
    line = f"{ready} of {len(results)} hosts answered"
    if failed:
        line += "; failed: " + ", ".join(f"{r.name} ({r.error})" for r in failed)
    out.write(line + "\n")
