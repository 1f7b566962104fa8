"""Find asyncssh's optional C libraries without subprocesses, before asyncssh looks.

Importing asyncssh calls `ctypes.util.find_library` for liboqs (post-quantum key exchange,
`asyncssh.crypto.pq`, as "oqs" and "liboqs") and for nettle (UMAC, `asyncssh.crypto.umac`).
On Linux each call runs `ldconfig -p` and, when the library is absent (liboqs usually is),
`gcc` and `ld` as well: up to seven processes and 0.1-0.3 s of every `gpudash` run on an idle
machine, over a second on a loaded one, before the first connection starts. A library is
either in a directory the dynamic linker searches or it is not, so these names are answered
by looking there; every other name goes to ctypes as before.
"""

from __future__ import annotations

import ctypes.util
import os
from collections.abc import Callable

_LIBS = {"oqs": "liboqs", "liboqs": "liboqs", "nettle": "libnettle"}
_DIRS = (
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local/lib",
    "/usr/local/lib64",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
)


def find(name: str) -> str | None:
    """The shared object for `name` ("oqs", "nettle") as find_library names it, or None."""
    stem = _LIBS.get(name, f"lib{name}")
    extra = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for directory in (*extra, *_DIRS):
        names = _listing(directory)
        found = sorted(n for n in names if n.startswith(f"{stem}.so."))
        if found:
            return found[0]
        if f"{stem}.so" in names:
            return f"{stem}.so"
    return None


def _listing(directory: str) -> frozenset[str]:
    """The names in `directory` (none when it cannot be read), listed once a process:
    asyncssh asks for three names, ten directories each, and the system's library directories
    hold thousands of names (globbing each one three times cost ~5 ms of every start)."""
    names = _LISTED.get(directory)
    if names is None:
        try:
            names = frozenset(os.listdir(directory))
        except OSError:
            names = frozenset()
        _LISTED[directory] = names
    return names


_LISTED: dict[str, frozenset[str]] = {}


def install() -> None:
    """Route find_library for asyncssh's libraries to `find` (idempotent)."""
    original: Callable[[str], str | None] = ctypes.util.find_library
    if getattr(original, "_gpudash", False):
        return

    def find_library(name: str) -> str | None:
        return find(name) if name in _LIBS else original(name)

    find_library._gpudash = True  # type: ignore[attr-defined]
    ctypes.util.find_library = find_library
