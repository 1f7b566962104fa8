"""The headless commands (`probe`, `parse`) and the entry point that opens the app.

Every user error is one line on stderr naming the thing at fault, with exit code 2; a host
that fails is exit code 1; nothing prints a traceback at a user.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from gpudash import __version__
from gpudash.probe import TOOL_KINDS

if TYPE_CHECKING:
    from gpudash.config.model import Config

EXIT_OK, EXIT_HOST_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a command killed by SIGPIPE

# Subcommands that other modules add, by name. Each module has `register(subparsers)`, which
# adds its parsers with `set_defaults(handler=...)`; a handler takes the parsed args and
# returns the exit code. Only the module of the command being run is imported (the others'
# imports cost a `gpudash probe` 30-50 ms); help and a mistyped command import them all.
COMMAND_MODULES: dict[str, str] = {
    "tasks": "gpudash.cli.tasks",
    "run": "gpudash.cli.tasks",
    "check": "gpudash.cli.check",
    "report": "gpudash.cli.check",
}
BUILTIN_COMMANDS = ("probe", "parse")


class UsageError(Exception):
    """A one-line problem with what the user asked for (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`; without it, one that knows every command."""
    parser = _Parser(
        prog="gpudash",
        description="Triage and bootstrap GPU machines for LLM inference, over SSH.",
    )
    parser.add_argument("--version", action="version", version=f"gpudash {__version__}")
    parser.add_argument("--config", metavar="PATH", help="config file (default: see README)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    probe = sub.add_parser("probe", help="probe hosts and print what they have")
    probe.add_argument("hosts", nargs="*", metavar="HOST", help="hosts to probe (default: all)")
    probe.add_argument("--json", action="store_true", help="print one JSON document")
    probe.add_argument("--save", metavar="DIR", help="write each host's raw outputs to DIR/HOST/")
    probe.add_argument("--replay", metavar="DIR", help="show a --save directory, no connecting")
    add_config_option(probe)

    parse = sub.add_parser("parse", help="parse one saved tool output and print JSON")
    parse.add_argument("kind", choices=TOOL_KINDS, help="which tool printed it")
    parse.add_argument("file", nargs="?", default="-", help="the file, or - for stdin")
    parse.add_argument("--fields", help="column names of a --format=csv,noheader query")
    probe.set_defaults(handler=_probe)
    parse.set_defaults(handler=_parse)
    for name in _command_modules(argv):
        importlib.import_module(name).register(sub)
    return parser


def _command_modules(argv: Sequence[str] | None) -> list[str]:
    """The modules whose commands `argv` may need: the one that owns its command, none for
    a built-in command or the app, all for help or a command no one owns (so that the
    error lists every choice)."""
    everything = list(dict.fromkeys(COMMAND_MODULES.values()))
    if argv is None:
        return everything
    command, after_config = None, False
    for arg in argv:
        if after_config:
            after_config = False
        elif arg == "--config":
            after_config = True
        elif arg in ("-h", "--help"):
            return everything
        elif not arg.startswith("-"):
            command = arg
            break
    if command is None or command in BUILTIN_COMMANDS:
        return []
    return [COMMAND_MODULES[command]] if command in COMMAND_MODULES else everything


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """`--config` accepted after the subcommand too (`gpudash probe --config x.toml`)."""
    parser.add_argument("--config", dest="sub_config", metavar="PATH", help=argparse.SUPPRESS)


def entry() -> NoReturn:
    """The `gpudash` command: `main`, then exit without tearing the interpreter down.

    By then the output is written and every connection, file and thread is closed (by
    `asyncio.run` and the app); the teardown only frees memory the kernel frees anyway, and
    it cost ~40 ms of every run (measured on the 2-vCPU development VM)."""
    code = main()
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)  # a profiler or coverage tool writes its results at exit
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone (`| head`), closed
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else argv
        args = build_parser(argv).parse_args(argv)
        return _dispatch(args)
    except UsageError as exc:
        print(f"gpudash: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gpudash: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`gpudash probe | head`): nothing is lost that anyone reads, and
        # the output still buffered must not fail again at exit.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _dispatch(args: argparse.Namespace) -> int:
    from gpudash.config.model import ConfigError

    try:
        if args.command is not None:
            return int(args.handler(args))
        from gpudash.ui import run_app

        return run_app(load(args))
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE


def load(args: argparse.Namespace) -> Config:
    """The config the user named (before or after the subcommand), or the default lookup."""
    from gpudash.config.load import load_config

    return load_config(getattr(args, "sub_config", None) or args.config)


def _parse(args: argparse.Namespace) -> int:
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
    return EXIT_OK


def _probe(args: argparse.Namespace) -> int:
    from gpudash.cli.probe import probe_command, replay_config

    config = replay_config(Path(args.replay)) if args.replay else load(args)
    known = {h.name for h in config.hosts}
    unknown = [h for h in args.hosts if h not in known]
    if unknown:
        where = config.path or "the default config"
        raise UsageError(
            f"unknown host {unknown[0]!r} in {where} (hosts: {', '.join(sorted(known))})"
        )
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
