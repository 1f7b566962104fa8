"""`gpudash report HOST`: probe one host (and the peers it is compared with), then write its
triage report: Markdown to paste into a ticket, or JSON.

    gpudash report HOST [--format md|json] [-o FILE] [--replay DIR]
        exit 0 when the report was written (whatever it says: a host with fail findings, or
        one that did not answer, gets a report that says so), 2 for usage/config errors and
        when FILE cannot be written

A report is the product, not a verdict: `gpudash report gpu1 -o t.md && attach t.md` must
attach the report of a broken host too. `gpudash check` is the command whose exit code is
the verdict (see gpudash/cli/check.py, `--fail-on`).

`--replay DIR` works as for `gpudash check` (gpudash/cli/check.py says how).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from gpudash.checks import check_fleet
from gpudash.cli.errors import ExitCode, UsageError
from gpudash.cli.hosts import add_config_option, one_host, replayed, with_peers
from gpudash.config.model import Config
from gpudash.model import HostResult


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser("report", help="a triage report of one host, to paste in a ticket")
    report.add_argument("host", metavar="HOST", nargs="+", help="one host (a name or glob)")
    report.add_argument("--format", choices=("md", "json"), default="md", help="default: md")
    report.add_argument("-o", "--output", metavar="FILE", help="write it here, not to stdout")
    report.add_argument("--replay", metavar="DIR", help="report a --save directory")
    add_config_option(report)
    report.set_defaults(handler=_report)


async def probe_all(config: Config, names: Sequence[str]) -> dict[str, HostResult]:
    """Probe `names` concurrently and return each host's last snapshot."""
    from gpudash.fleet import Fleet

    async with Fleet(config) as fleet:
        async for _ in fleet.probe(names):
            pass
    return {n: fleet.results.get(n) or HostResult(n) for n in names}


def _report(args: argparse.Namespace) -> ExitCode:
    from gpudash.report import render_json, render_markdown

    if len(args.host) > 1:
        raise UsageError(
            f"report takes one host ({' '.join(args.host)} given): run it once per host,"
            f" or `gpudash check {' '.join(args.host)}` for all of them"
        )
    config = replayed(args)
    config, host = one_host(config, args.host[0])
    names = with_peers(config, [host.name])
    results = asyncio.run(probe_all(config, names))
    findings = check_fleet(config, results, [host.name])[host.name]
    result = results[host.name]
    if args.format == "json":
        from gpudash.cli.document import envelope

        text = json.dumps(envelope(render_json(result, findings)), indent=2) + "\n"
    else:
        text = render_markdown(result, findings)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{args.output}: {exc.strerror or exc}") from None
        worst = max((f.severity for f in findings), key=lambda s: s.rank, default=None)
        verdict = f", worst finding: {worst.value}" if worst is not None else ""
        # stderr: stdout stays empty for a script, and the person sees it was written
        print(
            f"gpudash: wrote the report of {host.name} to {args.output}{verdict}", file=sys.stderr
        )
    else:
        sys.stdout.write(text)
    return ExitCode.OK
