"""`gpudash probe [HOST...]` without a screen: a readable line per section, or one JSON
document; `--save DIR` keeps each host's raw outputs, `--replay DIR` shows them.

Text is grouped by host: a host's lines come as one block once it has finished (the first
host to finish comes first), so ten hosts answering at once never interleave into a column
no one can read. With one host there is nothing to group and each line comes as its section
arrives; `--interleave` gets that for many hosts too (each line prefixed with its host).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from gpudash.cli import startup
from gpudash.cli.errors import ExitCode, UsageError
from gpudash.cli.hosts import add_config_option, add_selection, load, replay_config, select_hosts
from gpudash.config.model import Config
from gpudash.fleet import Fleet
from gpudash.model import Event, HostResult, HostState, HostStateChanged, ProbeFinished, SectionDone
from gpudash.probe.registry import SECTION_NAMES
from gpudash.summary import section_line
from gpudash.text import clean_line


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    probe = sub.add_parser("probe", help="probe hosts and print what they have")
    add_selection(probe)
    probe.add_argument("--json", action="store_true", help="print one JSON document")
    probe.add_argument(
        "--interleave",
        action="store_true",
        help="print each line as it arrives, hosts mixed (default: a block per finished host)",
    )
    probe.add_argument("--save", metavar="DIR", help="write each host's raw outputs to DIR/HOST/")
    probe.add_argument("--replay", metavar="DIR", help="show a --save directory, no connecting")
    add_config_option(probe)
    probe.set_defaults(handler=_probe)


def _probe(args: argparse.Namespace) -> ExitCode:
    config = replay_config(Path(args.replay)) if args.replay else load(args)
    config, hosts = select_hosts(config, args.hosts, args.tags, accept_new=args.accept_new_host_key)
    names = [h.name for h in hosts] if args.hosts or args.tags else None
    save = Path(args.save) if args.save else None
    if save is not None:
        import tempfile  # only here (ctypes.util loads it on the ssh path, not on the others)

        try:  # before connecting anywhere: a bad --save must not cost a whole probe round
            save.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=".gpudash-write-test-", dir=save)  # O_EXCL
            os.close(fd)
            os.unlink(name)
        except OSError as exc:
            raise UsageError(f"--save {save}: {exc.strerror or exc}") from None
    return asyncio.run(
        probe_command(config, names, as_json=args.json, save=save, interleave=args.interleave)
    )


async def probe_command(
    config: Config,
    names: list[str] | None,
    *,
    as_json: bool,
    save: Path | None,
    out: TextIO | None = None,
    interleave: bool = False,
) -> ExitCode:
    """Probe `names` (default: all), print as the events come (a block per host as each
    finishes, unless `interleave`), and return FAILED when any host did not answer."""
    from gpudash.cli.document import envelope

    out = out or sys.stdout
    unsaved: list[str] = []
    async with Fleet(config, findings=False) as fleet:
        hosts = fleet.hosts(names)
        width = max((len(h.name) for h in hosts), default=4)
        stream = interleave or len(hosts) < 2
        held: dict[str, list[tuple[int, str]]] = {}
        async for event in fleet.probe(names):
            if len(hosts) > 1 or not _connecting(event):
                # One host: connected (its sections' modules loaded) or failed. More: the
                # first event (asyncssh is loaded), so that their handshakes' garbage is not
                # frozen with the start's (peak RSS of bench_scale's 1,000 hosts).
                startup.resume()
            snapshot = fleet.results[event.host]  # the fleet folded `event` in already
            if not as_json and (line := _event_line(event, snapshot, width)) is not None:
                if stream:
                    out.write(line)
                    out.flush()
                else:
                    held.setdefault(event.host, []).append((_rank(event), line))
            if isinstance(event, ProbeFinished):
                if save is not None:
                    from gpudash.saved import save_host

                    try:
                        save_host(save, snapshot)
                    except OSError as exc:  # a planted symlink, a full disk: said, no traceback
                        unsaved.append(event.host)
                        print(f"gpudash: --save: {clean_line(str(exc))}", file=sys.stderr)
                if held.get(event.host):
                    out.write(_block(held.pop(event.host)))
                    out.flush()
        for lines in held.values():  # a host that never finished (cannot happen today)
            out.write(_block(lines))
        results = [fleet.results.get(h.name) or HostResult(h.name) for h in hosts]
    if as_json:
        # One write: `json.dump` writes each token on its own, which is a system call each
        # (~2,000 for one host) wherever stdout is unbuffered (PYTHONUNBUFFERED=1).
        out.write(json.dumps(envelope({"hosts": [r.to_json() for r in results]}), indent=2) + "\n")
    else:
        _print_totals(results, out)
    out.flush()
    failed = unsaved or any(r.state is not HostState.READY for r in results)
    return ExitCode.FAILED if failed else ExitCode.OK


def _connecting(event: Event) -> bool:
    return isinstance(event, HostStateChanged) and event.state is HostState.CONNECTING


def _rank(event: Event) -> int:
    """Where a line goes in its host's block: host lines first, then the sections in the
    registry's order, so every block reads in one order whichever section finished first."""
    if isinstance(event, SectionDone) and event.result.name in SECTION_NAMES:
        return SECTION_NAMES.index(event.result.name)
    return -1 if not isinstance(event, SectionDone) else len(SECTION_NAMES)


def _block(lines: list[tuple[int, str]]) -> str:
    return "".join(line for _, line in sorted(lines, key=lambda item: item[0]))


def _unprefixed(host: str, reason: str | None) -> str:
    """A host's failure reason without the "HOST: " the transport puts first (the line
    names the host already)."""
    text = reason or "no reason given"
    return text.removeprefix(f"{host}: ")


def _event_line(event: Event, snap: HostResult, width: int) -> str | None:
    """The text line `event` prints, if any."""
    prefix = f"{snap.name:<{width}} │ "
    if isinstance(event, SectionDone):
        if snap.state is HostState.FAILED or (event.result.error and not event.result.parts):
            return None  # a section that never came: the host line below says why
        return _said(f"{prefix}{event.result.name:<8} {section_line(event.result)}")
    if isinstance(event, HostStateChanged):
        lines = []
        if event.state is HostState.FAILED:
            lines.append(_said(f"{prefix}FAILED   {_unprefixed(snap.name, event.reason)}"))
        # How the probe ran there (no `timeout` on PATH, ...).
        lines += [_said(f"{prefix}note     {note}") for note in event.notes]
        return "".join(lines) or None
    return None


def _said(line: str) -> str:
    """One line for the terminal. Host names, reasons and section lines carry host or file
    text (a replayed capture's host label can hold OSC 52 or U+202E): cleaned here, last."""
    return clean_line(line) + "\n"


def _print_totals(results: list[HostResult], out: TextIO) -> None:
    ready = sum(r.state is HostState.READY for r in results)
    failed = [r for r in results if r.state is not HostState.READY]
    line = f"{ready} of {len(results)} hosts answered"
    if failed:  # each one's FAILED line above says why: named once here, not repeated
        line += "; no answer from " + ", ".join(r.name for r in failed)
    out.write(_said(line))
