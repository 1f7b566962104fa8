"""Run one section's body for real: prelude + BODY under a real POSIX shell, then parse.

Tests use this instead of mocks so that every section is exercised by dash (the default
/bin/sh here, as on Debian and Ubuntu) and, where installed, busybox sh, against real files.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
import time
from importlib.resources import files
from pathlib import Path
from types import ModuleType

from gpudash.probe.parts import Part, split_parts

PRELUDE = files("gpudash.probe").joinpath("prelude.sh").read_text(encoding="utf-8")


def script_of(module: ModuleType) -> str:
    return f"{PRELUDE}\n{module.BODY}\n"


def run_raw(
    module: ModuleType,
    env: dict[str, str],
    *,
    shell: tuple[str, ...] = ("/bin/sh",),
    timeout: float | None = None,
) -> tuple[str, str, float]:
    """The section's raw output, its nonce and the seconds it took."""
    nonce = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="gd-section-") as tmp:
        path = Path(tmp) / f"{module.NAME}.sh"
        path.write_text(script_of(module), encoding="utf-8")
        start = time.perf_counter()
        proc = subprocess.run(
            [*shell, str(path)],
            env={**env, "GPUDASH_NONCE": nonce},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout if timeout is not None else module.TIMEOUT + 5,
            check=False,
        )
        took = time.perf_counter() - start
    return proc.stdout.decode("utf-8", errors="replace"), nonce, took


def run_section(
    module: ModuleType,
    env: dict[str, str],
    *,
    shell: tuple[str, ...] = ("/bin/sh",),
    timeout: float | None = None,
) -> tuple[dict[str, Part], object]:
    """Run `module.BODY` with exactly `env` (plus a random nonce); its parts and parse."""
    text, nonce, _ = run_raw(module, env, shell=shell, timeout=timeout)
    parts = split_parts(text, nonce)
    return parts, module.parse(parts)


# What a minimal host has: enough for the bodies' plumbing, none of the tools they look for.
BASIC_TOOLS = (
    "cat", "grep", "sed", "tr", "head", "tail", "cut", "sort", "readlink", "mktemp", "rm",
    "du", "df", "uname", "nproc", "getconf", "date", "timeout", "ls",
)  # fmt: skip


def bin_dir(where: Path, tools: tuple[str, ...] = BASIC_TOOLS) -> str:
    """A directory holding links to just `tools` (those this machine has), for PATH."""
    where.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        if found and not (where / tool).exists():
            (where / tool).symlink_to(found)
    return str(where)


def script_tool(where: Path, name: str, text: str) -> Path:
    """An executable sh script `name` in `where` that runs `text`."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_text(f"#!/bin/sh\n{text}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


SHELL_NAMES = ("sh", "busybox")
"""The shells a section body is run under: parametrize by these names and resolve each in the
test (`shell_argv`), never at import: a missing busybox then fails its own tests, each in one
line, instead of aborting the collection of the whole run (issue 33, item 2)."""


def shell_argv(name: str) -> tuple[str, ...]:
    """The argv of one of `SHELL_NAMES` (a missing tool fails the calling test)."""
    return ("/bin/sh",) if name == "sh" else busybox_sh()


def busybox_sh() -> tuple[str, ...]:
    """busybox's `sh` (a missing busybox fails the test: `tests.support.tools.require`)."""
    from tests.support.tools import busybox_sh as required

    return required()
