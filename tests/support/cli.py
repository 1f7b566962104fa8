"""`gpudash(*args)`: the real CLI in a process of its own, as a user runs it, and `tree_of`,
what a directory holds (for the copies' tests)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def gpudash(
    *args: str,
    timeout: float = 60,
    text: bool = True,
    env: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """`python -m gpudash ARGS` with this environment (the isolated HOME of the suite's
    autouse fixture) or `env`; its output captured, as text unless `text=False`."""
    return subprocess.run(
        [sys.executable, "-m", "gpudash", *args],
        capture_output=True,
        text=text,
        timeout=timeout,
        env=dict(os.environ if env is None else env),
        **kwargs,
    )


def tree_of(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry under root: (kind and mode, sha256 or link target)."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            out[rel] = (f"dir {path.stat().st_mode & 0o777:o}", "")
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[rel] = (f"file {path.stat().st_mode & 0o777:o}", digest)
    return out
