"""The config file: where it is, what it holds, and every way it can be wrong.

    find_config_path  --config PATH, then $GPUDASH_CONFIG, then
                      $XDG_CONFIG_HOME/gpudash/config.toml (~/.config/gpudash/config.toml)
    load_config       find + read + parse; no file at all means `default_config()`
    parse_config      TOML text -> Config, or ConfigError listing every problem at once

A config is read in three steps. tomllib parses the text (a syntax error stops there: TOML
offers nothing to check beyond it). `gpudash.config_hosts` then checks the document against
the key tables in `gpudash.config_schema`, collecting every problem instead of stopping at the
first, because fixing a file one error per run is miserable. Last, `gpudash.config_lines`
finds the line of each problem's key in the source, and a problem gets a line only if that
scan is sure of it: a made-up line number is worse than none.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudash.config_hosts import check_document
from gpudash.config_lines import KeyLines, KeyPath, key_lines, render_path

if TYPE_CHECKING:
    from gpudash.checks.expect_config import Expect

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_MODEL_DIRS = ("/root/models", "~/models", "~/.cache/huggingface/hub")
DEFAULT_VENV_PATHS = ("~/.venv", "~/venv", "~/venvs/*", "/opt/*/.venv")
DEFAULT_NETWORK_TARGETS = (
    "https://huggingface.co",
    "https://pypi.org/simple/",
    "https://download.pytorch.org/whl/",
    "https://github.com",
)
"""Where models, weights and wheels come from: what an inference box must be able to reach."""

EMBEDDED_DEFAULT = '[hosts.localhost]\ntransport = "local"\n'
"""With no config file gpudash triages the machine it runs on. Kept as TOML and parsed like
any file, so the default cannot drift from what a file would mean."""


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a config file, printed as one line: `FILE:LINE: key.path: problem`.

    `line` is None unless the TOML parser named it or the key was found in the text for sure.
    `key` is "" for problems with the file itself (missing, unreadable, not TOML).
    """

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(Exception):
    """A config file that cannot be used; `str()` is one line per problem."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems: list[ConfigProblem] = list(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


@dataclass(frozen=True)
class HostConfig:
    """One host as configured: how to reach it and what to look for on it."""

    name: str
    transport: str = "ssh"
    """"ssh", "local" (this machine, no SSH) or "replay" (a saved probe, for demos and tests)."""
    address: str = ""
    """Hostname, IP or ~/.ssh/config alias; "" means the name (filled in on construction)."""
    user: str | None = None
    port: int | None = None
    identity_files: tuple[str, ...] = ()
    jump: str | None = None
    """ProxyJump: a configured host's name or "[user@]host[:port]"."""
    host_key_policy: str = "strict"
    """"strict" (known_hosts must match), "accept-new" (TOFU) or "insecure" (no check)."""
    known_hosts: str | None = None
    tags: tuple[str, ...] = ()
    model_dirs: tuple[str, ...] = DEFAULT_MODEL_DIRS
    venv_paths: tuple[str, ...] = DEFAULT_VENV_PATHS
    network_targets: tuple[str, ...] = DEFAULT_NETWORK_TARGETS
    connect_timeout: float = 10.0
    probe_timeout: float = 60.0
    """The whole probe, connect to last section."""
    section_timeout: float = 20.0
    """Each probe section, enforced on the host with `timeout -k`."""
    replay_dir: str | None = None
    expect: Expect | None = None
    """What the host should be: [defaults], [expect.TAG] and its own `expect`, merged."""

    def __post_init__(self) -> None:
        if not self.address:
            object.__setattr__(self, "address", self.name)


@dataclass(frozen=True)
class UiConfig:
    """The `[ui]` table: how the app looks and behaves (the headless commands ignore it)."""

    theme: str | None = None
    """A Textual theme name ("textual-dark", "nord", ...); None is the app's default."""
    refresh_s: float = 0.0
    """Re-probe every host this many seconds after its last probe finished; 0 is off."""
    save_dir: str = "gpudash-saved"
    """Where the app's `s` key saves the selected host's raw outputs (`probe --save`)."""


@dataclass(frozen=True)
class Config:
    """A whole config: its file and its hosts, in the order the file lists them."""

    path: str | None
    """The file it came from; None for the embedded default."""
    hosts: tuple[HostConfig, ...]
    concurrency: int = 64
    """Hosts probed at once."""
    max_handshakes: int = 16
    """SSH handshakes at once: sshd's MaxStartups drops unauthenticated ones past ~10."""
    tasks: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """Task specs by name (gpudash.tasks.spec.TaskSpec): built-ins plus `[tasks.NAME]`."""
    ui: UiConfig = UiConfig()
    keys: tuple[tuple[str, str], ...] = ()
    """`[keys]`: (binding id, keys) pairs that remap the app's keys."""

    def host(self, name: str) -> HostConfig | None:
        """The host called exactly `name`, or None."""
        return next((host for host in self.hosts if host.name == name), None)


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
    try:
        data = path.read_bytes()
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
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([_syntax_problem(file, str(exc))]) from None
    problems = _Problems(file, key_lines(text, data))
    checked = check_document(data, problems.report)
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
