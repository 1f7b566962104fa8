"""The config's model: what a config file means once checked, and how a problem is named.

The bottom of the config package: it imports nothing of gpudash's but (for types) the
`[expect]` table's model, so every layer can read a HostConfig without pulling in the loader.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudash.config.expect import Expect
    from gpudash.tasks.spec import TaskSpec

DEFAULT_MODEL_DIRS = ("/root/models", "~/models", "~/.cache/huggingface/hub")
DEFAULT_VENV_PATHS = ("~/.venv", "~/venv", "~/venvs/*", "/opt/*/.venv")
DEFAULT_NETWORK_TARGETS = (
    "https://huggingface.co",
    "https://pypi.org/simple/",
    "https://download.pytorch.org/whl/",
    "https://github.com",
)
"""Where models, weights and wheels come from: what an inference box must be able to reach."""


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
    tasks: Mapping[str, TaskSpec] = field(default_factory=dict, compare=False)
    """Task specs by name: built-ins plus `[tasks.NAME]`."""
    ui: UiConfig = UiConfig()
    keys: tuple[tuple[str, str], ...] = ()
    """`[keys]`: (binding id, keys) pairs that remap the app's keys."""

    def host(self, name: str) -> HostConfig | None:
        """The host called exactly `name`, or None."""
        return next((host for host in self.hosts if host.name == name), None)
