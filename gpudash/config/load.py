"""The config file: where it is, what it holds, and every way it can be wrong.

    find_config_path  --config PATH, then $GPUDASH_CONFIG, then
                      $XDG_CONFIG_HOME/gpudash/config.toml (~/.config/gpudash/config.toml)
    load_config       find + read + parse; no file at all means `default_config()`
    parse_config      TOML text -> Config, or ConfigError listing every problem at once

A config is read in three steps. tomllib parses the text (a syntax error stops there: TOML
offers nothing to check beyond it). `gpudash.config.document` then checks the document against
the key tables in `gpudash.config.schema`, collecting every problem instead of stopping at the
first, because fixing a file one error per run is miserable. Last, `gpudash.config.lines`
finds the line of each problem's key in the source, and a problem gets a line only if that
scan is sure of it: a made-up line number is worse than none.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from gpudash.config.document import check_document
from gpudash.config.lines import KeyLines, KeyPath, key_lines, render_path
from gpudash.config.model import Config, ConfigError, ConfigProblem, HostConfig, UiConfig
from gpudash.files import MiB, RefusedFile, read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

CONFIG_LIMIT = 4 * MiB
"""A config of a thousand hosts is ~100 KB; anything past this is not a config."""

EMBEDDED_DEFAULT = '[hosts.localhost]\ntransport = "local"\n'
"""With no config file gpudash triages the machine it runs on. Kept as TOML and parsed like
any file, so the default cannot drift from what a file would mean."""


def find_config_path(cli_path: str | None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The config file to read, or None when there is none and the default applies.

    A path the user named (--config, $GPUDASH_CONFIG) must exist: silently falling back to
    the default would probe the wrong machines. The XDG location is only used if present.
    An empty $GPUDASH_CONFIG counts as unset, as shells make unsetting awkward.
    """
    named = [("--config", cli_path), ("$GPUDASH_CONFIG", environ.get("GPUDASH_CONFIG") or None)]
    for source, value in named:
        if value is None:
            continue
        if not value:
            raise ConfigError([ConfigProblem(source, None, "", "empty path")])
        path = Path(_expand_home(value, environ))
        if not path.exists():
            raise ConfigError([ConfigProblem(value, None, "", f"no such file (named by {source})")])
        return path
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec says to ignore a relative value
        base = Path(xdg)
    elif environ.get("HOME"):
        base = Path(environ["HOME"], ".config")
    else:
        return None
    path = base / "gpudash" / "config.toml"
    return path if path.exists() else None


def _expand_home(path: str, environ: Mapping[str, str]) -> str:
    """`~/x` against `environ`'s HOME (a quoted $GPUDASH_CONFIG reaches us unexpanded)."""
    home = environ.get("HOME")
    if home and (path == "~" or path.startswith("~/")):
        return home + path[1:]
    return path


def load_config(cli_path: str | None = None, environ: Mapping[str, str] = os.environ) -> Config:
    """Find and parse the config; the embedded default when there is no file."""
    path = find_config_path(cli_path, environ)
    if path is None:
        return default_config()
    file = str(path)
    try:  # a FIFO, a device or a huge file named as the config: refused, never read blindly
        data = read_bytes(path, limit=CONFIG_LIMIT)
    except RefusedFile as exc:
        raise ConfigError([ConfigProblem(file, None, "", f"cannot read: {exc.why}")]) from None
    except OSError as exc:
        problem = ConfigProblem(file, None, "", f"cannot read: {exc.strerror or exc}")
        raise ConfigError([problem]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problem = ConfigProblem(file, line, "", "not UTF-8 text (TOML must be UTF-8)")
        raise ConfigError([problem]) from None
    return parse_config(text, file)


def parse_config(text: str, file: str) -> Config:
    """Parse and check a config's text; `file` is only used to name it in problems."""
    try:
        data = tomllib.loads(text)
        problems = _Problems(file, key_lines(text, data))
        checked = check_document(data, problems.report)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([_syntax_problem(file, str(exc))]) from None
    except RecursionError:  # tomllib recurses per nesting level: `a = [[[[...` 3000 deep
        problem = ConfigProblem(file, None, "", "invalid TOML: nested too deeply")
        raise ConfigError([problem]) from None
    if problems.rows:
        # In file order, like a compiler; problems with no line (a missing key) go last.
        rows = sorted(problems.rows, key=lambda row: (row.line is None, row.line or 0))
        raise ConfigError(rows)
    hosts = tuple(HostConfig(name=name, **fields) for name, fields in checked.hosts)  # type: ignore[arg-type]
    ui = UiConfig(**checked.ui)  # type: ignore[arg-type]
    keys = tuple((k, str(v)) for k, v in checked.keys.items())
    return Config(file, hosts, **checked.fleet, ui=ui, keys=keys, tasks=checked.tasks)  # type: ignore[arg-type]


def default_config() -> Config:
    """The config used when there is no file: this machine, over no SSH at all."""
    return replace(parse_config(EMBEDDED_DEFAULT, "<default config>"), path=None)


class _Problems:
    """Collects problems for one file, giving each the line of its key where it is known."""

    def __init__(self, file: str, lines: KeyLines) -> None:
        self.file = file
        self.lines = lines
        self.rows: list[ConfigProblem] = []

    def report(self, path: KeyPath, message: str) -> None:
        self.rows.append(
            ConfigProblem(self.file, self.lines.line(path), render_path(path), message)
        )


_POSITION = re.compile(
    r"^(?P<message>.*) \((?:at line (?P<line>\d+), column (?P<column>\d+)|at end of document)\)$"
)
_TWICE = re.compile(r"^Cannot declare (?P<key>\(.*\)) twice$")
_IMMUTABLE = re.compile(r"^Cannot mutate immutable namespace (?P<key>\(.*\))$")


def _syntax_problem(file: str, error: str) -> ConfigProblem:
    """tomllib's error as a problem row, with its line, and with the key path where tomllib
    names one (as a Python tuple; the two messages people meet most read better in TOML)."""
    match = _POSITION.match(error)
    if match is None:
        return ConfigProblem(file, None, "", f"invalid TOML: {error}")
    message, line = match["message"], match["line"]
    where = f" (column {match['column']})" if match["column"] else " (at end of file)"
    for pattern, says in ((_TWICE, "defined twice"), (_IMMUTABLE, _IMMUTABLE_SAYS)):
        named = pattern.match(message)
        key = _tuple_key(named["key"]) if named else None
        if key is not None:
            return ConfigProblem(file, int(line) if line else None, render_path(key), says)
    return ConfigProblem(file, int(line) if line else None, "", f"invalid TOML: {message}{where}")


_IMMUTABLE_SAYS = "already defined as an inline table ({ ... }), which cannot be added to later"


def _tuple_key(text: str) -> tuple[str, ...] | None:
    try:
        key = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if isinstance(key, tuple) and key and all(isinstance(part, str) for part in key):
        return key
    return None
