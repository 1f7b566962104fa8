"""`gpudash check [HOST...]` and `gpudash report HOST`: probe, then say what is wrong.

    gpudash check [HOST...] [--json] [--all] [--replay DIR]
        findings per host; exit 0 when none is fail, 1 otherwise, 2 for usage/config errors
    gpudash report HOST [--format md|json] [-o FILE] [--replay DIR]
        one host's triage report (Markdown to paste into a ticket, or JSON)

Hosts that share a tag with a named host are probed too (without being reported), since the
comparison checks need them. `--replay DIR` reads `gpudash probe --save` captures instead of
connecting; with a config named as well (--config or $GPUDASH_CONFIG), the config's hosts
that have a capture in DIR are replayed from it with their tags and expectations.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TextIO

from gpudash.checks import check_fleet
from gpudash.checks.finding import Finding, Severity, counts, worst_severity
from gpudash.cli.main import EXIT_USAGE, UsageError, add_config_option, load
from gpudash.config.model import Config
from gpudash.model import Event, HostResult, ProbeFinished, apply

EXIT_OK, EXIT_FAIL = 0, 1


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    check = sub.add_parser("check", help="probe hosts and list what is wrong with them")
    check.add_argument("hosts", nargs="*", metavar="HOST", help="hosts to check (default: all)")
    check.add_argument("--json", action="store_true", help="print one JSON document")
    check.add_argument("--all", action="store_true", help="also list ok findings")
    check.add_argument("--replay", metavar="DIR", help="check a --save directory, no connecting")
    add_config_option(check)
    check.set_defaults(handler=_check)

    report = sub.add_parser("report", help="a triage report of one host, to paste in a ticket")
    report.add_argument("host", metavar="HOST")
    report.add_argument("--format", choices=("md", "json"), default="md", help="default: md")
    report.add_argument("-o", "--output", metavar="FILE", help="write it here, not to stdout")
    report.add_argument("--replay", metavar="DIR", help="report a --save directory")
    add_config_option(report)
    report.set_defaults(handler=_report)


def _config(args: argparse.Namespace) -> Config:
    if not args.replay:
        return load(args)
    from gpudash.cli.probe import replay_config

    saved = replay_config(Path(args.replay))
    named = getattr(args, "sub_config", None) or args.config or os.environ.get("GPUDASH_CONFIG")
    if not named:
        return saved
    config = load(args)
    dirs = {h.name: h.replay_dir for h in saved.hosts}
    hosts = tuple(
        dataclasses.replace(h, transport="replay", replay_dir=dirs[h.name])
        for h in config.hosts
        if h.name in dirs
    )
    if not hosts:
        raise UsageError(f"{args.replay}: no capture for any host of {config.path}")
    return dataclasses.replace(config, hosts=hosts)


def _with_peers(config: Config, names: list[str]) -> list[str]:
    """The named hosts plus every host sharing a tag with one of them, in config order."""
    tags = {t for h in config.hosts if h.name in names for t in h.tags}
    return [h.name for h in config.hosts if h.name in names or tags & set(h.tags)]


def _unknown(config: Config, names: list[str]) -> None:
    known = [h.name for h in config.hosts]
    for name in names:
        if name not in known:
            where = config.path or "the default config"
            raise UsageError(f"unknown host {name!r} in {where} (hosts: {', '.join(known)})")


async def probe_all(config: Config, names: list[str]) -> dict[str, HostResult]:
    """Probe `names` concurrently and return each host's last snapshot."""
    from gpudash.fleet import Fleet

    async with Fleet(config) as fleet:
        results = {n: HostResult(n) for n in names}
        async for event in fleet.probe(names):
            results[event.host] = apply(results[event.host], event)
    return results


def _check(args: argparse.Namespace) -> int:
    config = _config(args)
    _unknown(config, args.hosts)
    names = args.hosts or [h.name for h in config.hosts]
    found = asyncio.run(_check_streaming(config, names, args))
    failed = any(f.severity is Severity.FAIL for fs in found.values() for f in fs)
    return EXIT_FAIL if failed else EXIT_OK


async def _check_streaming(
    config: Config, names: list[str], args: argparse.Namespace
) -> dict[str, tuple[Finding, ...]]:
    """Text: each host's block as soon as its findings are final. JSON: one document at the
    end, in config order."""
    found: dict[str, tuple[Finding, ...]] = {}
    async for name, findings in stream_findings(config, names):
        found[name] = findings
        if not args.json:
            write_text({name: findings}, sys.stdout, show_ok=args.all)
    found = {n: found[n] for n in names if n in found}
    if args.json:
        write_json(found, sys.stdout)
    return found


async def stream_findings(
    config: Config, names: list[str]
) -> AsyncIterator[tuple[str, tuple[Finding, ...]]]:
    """Each named host's findings once they are final: the host and every host it is compared
    with (all that share a tag with it) have finished their round, so a slow host holds back
    only its own tag group. The Fleet computes them (FindingsComputed) as hosts finish."""
    from gpudash.fleet import Fleet

    tags = {h.name: h.tags for h in config.hosts}
    probed = _with_peers(config, names)
    unfinished = Counter(t for n in probed for t in tags[n])
    members: dict[str, list[str]] = {}
    for name in names:
        for tag in tags[name]:
            members.setdefault(tag, []).append(name)
    results = {n: HostResult(n) for n in probed}
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
                results[event.host] = apply(
                    results.get(event.host) or HostResult(event.host), event
                )
                if isinstance(event, ProbeFinished) and event.host not in finished:
                    finished.add(event.host)
                    for tag in tags[event.host]:
                        unfinished[tag] -= 1
                        if unfinished[tag] == 0:
                            due.update(members.get(tag, ()))
                    if event.host in order:
                        due.add(event.host)
                if events.empty():
                    for name in final():
                        yield name, tuple(results[name].findings)
            await pump  # re-raise what broke the stream, if anything did
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
    for name in [*final(), *sorted(due, key=order.__getitem__)]:
        yield name, tuple(results[name].findings)


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
    json.dump({"ok": not failed, "hosts": hosts}, out, indent=2)
    out.write("\n")


def write_text(found: dict[str, tuple[Finding, ...]], out: TextIO, *, show_ok: bool) -> None:
    for name, findings in found.items():
        n = counts(findings)
        worst = worst_severity(findings) or Severity.OK
        tally = ", ".join(f"{n[s]} {s.value}" for s in reversed(Severity) if n[s])
        out.write(f"{name}: {worst.value.upper()} ({tally or 'no findings'})\n")
        for f in findings:
            if f.severity is Severity.OK and not show_ok:
                continue
            out.write(f"  {f.severity.value.upper():<4}  {f.code}: {f.title}\n")
            if f.severity.rank >= Severity.WARN.rank:
                if f.why:
                    out.write(f"        why: {f.why}\n")
                if f.fix:
                    task = ""
                    if f.fix_task:
                        key = f" (key {f.fix_key})" if f.fix_key else ""
                        task = f"  [task {f.fix_task}{key}]"
                    out.write(f"        fix: {f.fix}{task}\n")
    out.flush()


def _report(args: argparse.Namespace) -> int:
    from gpudash.report import render_json, render_markdown

    config = _config(args)
    _unknown(config, [args.host])
    names = _with_peers(config, [args.host])
    results = asyncio.run(probe_all(config, names))
    findings = check_fleet(config, results, [args.host])[args.host]
    result = results[args.host]
    if args.format == "json":
        text = json.dumps(render_json(result, findings), indent=2) + "\n"
    else:
        text = render_markdown(result, findings)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)
    failed = any(f.severity is Severity.FAIL for f in findings)
    return EXIT_FAIL if failed else EXIT_OK


__all__ = ["EXIT_FAIL", "EXIT_OK", "EXIT_USAGE", "probe_all", "register", "stream_findings"]
