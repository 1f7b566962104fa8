"""`gpudash parse KIND [FILE]`: one saved tool output, parsed, printed as JSON (no host)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpudash.cli.errors import ExitCode, UsageError
from gpudash.probe import TOOL_KINDS


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parse = sub.add_parser("parse", help="parse one saved tool output and print JSON")
    parse.add_argument("kind", choices=TOOL_KINDS, help="which tool printed it")
    parse.add_argument("file", nargs="?", default="-", help="the file, or - for stdin")
    parse.add_argument("--fields", help="column names of a --format=csv,noheader query")
    parse.set_defaults(handler=parse_command)


def parse_command(args: argparse.Namespace) -> ExitCode:
    from gpudash.probe.tools import parse_tool

    if args.file == "-":
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    else:
        try:
            text = Path(args.file).read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"{args.file}: {exc.strerror or exc}") from None
    fields = [f.strip() for f in args.fields.split(",")] if args.fields else None
    print(json.dumps(parse_tool(args.kind, text, fields), indent=2))
    return ExitCode.OK
