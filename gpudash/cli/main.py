"""The `gpudash` command: one parser, one dispatch, and the entry point that opens the app.

Each command lives in a module of its own (probe, parse, check, report, tasks/run) with a
`register(subparsers)` that adds its parser and `set_defaults(handler=...)`; a handler takes
the parsed args and returns an `ExitCode`. Only the module of the command being run is
imported (the others' imports cost a `gpudash probe` 30-50 ms); help and a mistyped command
import them all, so that help and the error list every command.

Every user error is one line on stderr naming the thing at fault, with exit code 2; nothing
prints a traceback at a user (`errors.ExitCode` lists every code).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from gpudash import __version__
from gpudash.cli import startup
from gpudash.cli.errors import ExitCode, UsageError

# The module that owns each command, by name, in the order help lists them.
COMMAND_MODULES: dict[str, str] = {
    "probe": "gpudash.cli.probe",
    "parse": "gpudash.cli.parse",
    "tasks": "gpudash.cli.tasks",
    "run": "gpudash.cli.tasks",
    "stop": "gpudash.cli.stop",
    "check": "gpudash.cli.check",
    "report": "gpudash.cli.report",
    "completion": "gpudash.cli.completion",
}


NOT_A_TERMINAL = "not a terminal: use `gpudash probe` or `gpudash check` (the dashboard needs one)"
"""`gpudash` with stdin or stdout not a terminal (`gpudash < /dev/null > out`): one line and
exit 2, instead of the app writing escape codes into a file until it is killed."""


class _Parser(argparse.ArgumentParser):
    _intermixing = False

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        """A command's options anywhere among its positionals (`gpudash parse smi --text F`):
        plain argparse matches `KIND [FILE]` in one go at `smi`, leaving FILE unrecognized
        once an option sits between them. Intermixed parsing cannot take a parser that has
        subcommands (the top one), so only the commands' own parsers use it."""
        nested = any(a.nargs in (argparse.PARSER, argparse.REMAINDER) for a in self._actions)
        if nested or self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`; without it, one that knows every command."""
    parser = _Parser(
        prog="gpudash",
        description="Triage and bootstrap GPU machines for LLM inference, over SSH.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="config file (default: $GPUDASH_CONFIG, else $XDG_CONFIG_HOME/gpudash/config.toml,"
        " i.e. ~/.config/gpudash/config.toml; with none: this machine)",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for name in _command_modules(argv):
        importlib.import_module(name).register(sub)
    return parser


def _command_modules(argv: Sequence[str] | None) -> list[str]:
    """The modules whose commands `argv` may need: the one that owns its command, none for
    the app, all for help or a command no one owns (so that the error lists every choice)."""
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
    if command is None:
        return []
    return [COMMAND_MODULES[command]] if command in COMMAND_MODULES else everything


def entry() -> NoReturn:
    """The `gpudash` command: `main`, then exit without tearing the interpreter down.

    By then the output is written and every connection, file and thread is closed (by
    `asyncio.run` and the app); the teardown only frees memory the kernel frees anyway, and
    it cost ~40 ms of every run (measured on the 2-vCPU development VM)."""
    startup.pause()  # the console script's start (`python -m gpudash` paused it already)
    code = main()
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)  # a profiler or coverage tool writes its results at exit
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone (`| head`), closed
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command `argv` names (default: sys.argv) and return its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    finally:
        startup.resume()  # whatever happened: never left off


def _main(argv: Sequence[str]) -> int:
    if argv[:1] == ["__complete"]:  # a shell asking for candidates (gpudash/cli/completion.py)
        return _complete(argv[1:])
    try:
        args = build_parser(argv).parse_args(argv)
        if args.command != "probe":  # a probe resumes once its first host is connected
            startup.resume()
        return _dispatch(args)
    except UsageError as exc:
        print(f"gpudash: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        print("gpudash: interrupted", file=sys.stderr)
        return int(ExitCode.CANCELLED)
    except BrokenPipeError:
        # The reader left (`gpudash probe | head`): nothing is lost that anyone reads, and
        # the output still buffered must not fail again at exit.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.BROKEN_PIPE)


def _complete(words: Sequence[str]) -> int:
    """Print the completion candidates for `words`, one a line; never an error at a prompt."""
    from gpudash.cli.completion import complete

    try:
        candidates = complete(build_parser(None), list(words))
    except Exception:  # whatever went wrong, a TAB must not print a traceback into the line
        return int(ExitCode.OK)
    sys.stdout.write("".join(f"{c}\n" for c in candidates))
    return int(ExitCode.OK)


def _dispatch(args: argparse.Namespace) -> int:
    from gpudash.config.model import ConfigError

    try:
        if args.command is not None:
            code: ExitCode = args.handler(args)
            return int(code)
        if not (sys.stdin.isatty() and sys.stdout.isatty()):  # the app would draw into a file
            raise UsageError(NOT_A_TERMINAL)
        from gpudash.cli.hosts import load
        from gpudash.ui import run_app

        return run_app(load(args))  # the app's own status (0 unless it exits otherwise)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return int(ExitCode.USAGE)


class _Version(argparse.Action):
    """`--version` with the date of the stack facts, imported only when asked: a probe must not
    load the checks package (tests/ssh/test_startup.py)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        from gpudash.checks.facts import FACTS_DATE

        sys.stdout.write(f"gpudash {__version__} (stack facts of {FACTS_DATE})\n")
        parser.exit()
