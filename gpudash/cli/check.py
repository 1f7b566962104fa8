"""`gpudash check [HOST...]`: probe, then list what is wrong with each host.

    gpudash check [HOST...] [--json | --format text|json|prom] [--fail-on warn|fail]
                  [--all] [--replay DIR] [-o FILE]
        findings per host; exit 1 when any finding is at or above `--fail-on` (default
        fail: a warn exits 0), 0 otherwise, 2 for usage/config errors

`--format prom` writes Prometheus text exposition (gpudash/cli/prom.py) for node_exporter's
textfile collector; `-o FILE` writes any format to FILE atomically (a temporary file in the
same directory, renamed over it), so the collector never reads half a file.

Hosts that share a tag with a named host are probed too (without being reported), since the
comparison checks need them. `--replay DIR` reads `gpudash probe --save` captures instead of
connecting; with a config named as well (--config or $GPUDASH_CONFIG), the config's hosts
that have a capture in DIR are replayed from it with their tags and expectations.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gpudash.checks.finding import Finding, Severity, counts, worst_severity
from gpudash.cli.check_text import CheckText, write_text
from gpudash.cli.errors import ExitCode, UsageError
from gpudash.cli.hosts import add_config_option, add_selection, replayed, select_hosts, with_peers
from gpudash.config.model import Config
from gpudash.model import Event, HostResult, ProbeFinished

if TYPE_CHECKING:
    from gpudash.fleet import Fleet


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = sub.add_parser("check", help="probe hosts and list what is wrong with them")
    add_selection(check)
    check.add_argument("--json", action="store_true", help="print one JSON document")
    check.add_argument(
        "--format",
        choices=("text", "json", "prom"),
        help="text (default), json (= --json) or prom (Prometheus textfile exposition)",
    )
    check.add_argument(
        "--fail-on",
        choices=("warn", "fail"),
        default="fail",
        help="exit 1 when a finding is this bad or worse (default: fail)",
    )
    check.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    check.add_argument("--all", action="store_true", help="also list ok findings")
    check.add_argument("--replay", metavar="DIR", help="check a --save directory, no connecting")
    add_config_option(check)
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> ExitCode:
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"--json and --format {args.format} contradict each other: give one")
    fmt = "json" if args.json else (args.format or "text")
    output = Path(args.output) if args.output else None
    if output is not None and not output.parent.is_dir():
        raise UsageError(f"{output}: no such directory {str(output.parent)!r}")
    config = replayed(args)
    config, hosts = select_hosts(config, args.hosts, args.tags, accept_new=args.accept_new_host_key)
    names = [h.name for h in hosts]
    found = asyncio.run(_check_streaming(config, names, args, fmt, output))
    threshold = Severity(args.fail_on).rank
    failed = any(f.severity.rank >= threshold for fs in found.values() for f in fs)
    return ExitCode.FAILED if failed else ExitCode.OK


async def _check_streaming(
    config: Config, names: list[str], args: argparse.Namespace, fmt: str, output: Path | None
) -> dict[str, tuple[Finding, ...]]:
    """Text to stdout: each host's block as soon as its findings are final. JSON, prom, or
    anything to a file: one document at the end, in the order the hosts were named."""
    found: dict[str, tuple[Finding, ...]] = {}
    results: dict[str, HostResult] = {}
    streamed = CheckText(sys.stdout, show_ok=args.all)
    async for name, findings in stream_findings(config, names, results):
        found[name] = findings
        if fmt == "text" and output is None:
            streamed.host(name, findings)
    found = {n: found[n] for n in names if n in found}
    if fmt == "text" and output is None:
        streamed.end()
        return found
    buffer = io.StringIO()
    if fmt == "json":
        write_json(found, buffer)
    elif fmt == "prom":
        from gpudash.cli.prom import render_prom

        buffer.write(render_prom(found, results, generated_at=time.time()))
    else:
        write_text(found, buffer, show_ok=args.all)
    if output is None:
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
    else:
        write_atomically(output, buffer.getvalue())
    return found


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` by a rename, so a reader (node_exporter's textfile collector, a
    cron job) sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o644)  # the collector runs as another user
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


async def stream_findings(
    config: Config, names: Sequence[str], results: dict[str, HostResult] | None = None
) -> AsyncIterator[tuple[str, tuple[Finding, ...]]]:
    """Each named host's findings once they are final: the host and every host it is compared
    with (all that share a tag with it) have finished their round, so a slow host holds back
    only its own tag group. The Fleet computes them (FindingsComputed) as hosts finish.
    `results`, when given, gets each yielded host's probe results too (for GPU facts)."""
    from gpudash.fleet import Fleet

    tags = {h.name: h.tags for h in config.hosts}
    probed = with_peers(config, names)
    unfinished = Counter(t for n in probed for t in tags[n])
    members: dict[str, list[str]] = {}
    for name in names:
        for tag in tags[name]:
            members.setdefault(tag, []).append(name)
    finished: set[str] = set()
    order = {n: i for i, n in enumerate(names)}
    due: set[str] = set()

    def final() -> list[str]:
        ready = [n for n in due if all(unfinished[t] == 0 for t in tags[n])]
        due.difference_update(ready)
        return sorted(ready, key=order.__getitem__)

    async with Fleet(config) as fleet:
        # Through a queue: a host's ProbeFinished comes with the FindingsComputed its round
        # caused (its own, its peers'), and a host is final only once those are in. The Fleet
        # yields them back to back, so they are all queued before this loop runs again: an
        # empty queue means the batch is complete.
        events: asyncio.Queue[Event | None] = asyncio.Queue()
        pump = asyncio.ensure_future(_pump(fleet.probe(probed), events))
        try:
            while (event := await events.get()) is not None:
                if isinstance(event, ProbeFinished) and event.host not in finished:
                    finished.add(event.host)
                    for tag in tags[event.host]:
                        unfinished[tag] -= 1
                        if unfinished[tag] == 0:
                            due.update(members.get(tag, ()))
                    if event.host in order:
                        due.add(event.host)
                if events.empty():  # so fleet.results holds every event taken so far
                    for name in final():
                        if results is not None:
                            results[name] = fleet.results.get(name) or HostResult(name)
                        yield name, _findings(fleet, name)
            await pump  # re-raise what broke the stream, if anything did
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
    for name in [*final(), *sorted(due, key=order.__getitem__)]:
        if results is not None:
            results[name] = fleet.results.get(name) or HostResult(name)
        yield name, _findings(fleet, name)


def _findings(fleet: Fleet, name: str) -> tuple[Finding, ...]:
    """The host's findings in the fleet's folded results (a host only gets due once its
    ProbeFinished is in, so it has a snapshot)."""
    return tuple((fleet.results.get(name) or HostResult(name)).findings)


async def _pump(stream: AsyncIterator[Event], events: asyncio.Queue[Event | None]) -> None:
    try:
        async for event in stream:
            events.put_nowait(event)
    finally:
        events.put_nowait(None)


def write_json(found: dict[str, tuple[Finding, ...]], out: TextIO) -> None:
    hosts = []
    for name, findings in found.items():
        hosts.append(
            {
                "name": name,
                "worst": (worst_severity(findings) or Severity.OK).value,
                "counts": {k.value: v for k, v in counts(findings).items()},
                "findings": [f.to_json() for f in findings],
            }
        )
    failed = any(h["worst"] == "fail" for h in hosts)
    from gpudash.checks.facts import FACTS_DATE
    from gpudash.cli.document import envelope

    doc = envelope({"ok": not failed, "facts_date": FACTS_DATE, "hosts": hosts})
    json.dump(doc, out, indent=2)
    out.write("\n")


__all__ = ["register", "stream_findings", "write_json", "write_text"]
