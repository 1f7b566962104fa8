"""asyncssh without the X.509 import it cannot use: ~15 % of importing asyncssh, saved.

asyncssh's X.509 support (RFC 6187 `x509v3-*` keys: PKIX-SSH's and Tectia's, never
OpenSSH's) needs pyOpenSSL, an extra gpudash does not install (`asyncssh==2.24.1`, no
`[pyOpenSSL]`). Without it `asyncssh.crypto.x509` still imports `cryptography.x509` first
and only then fails on `from OpenSSL import crypto`, and asyncssh carries on without X.509.
That wasted import is the largest single piece of asyncssh's: ~25 ms of an idle start and
30-50 ms of CPU on the loaded 2-vCPU VM, on the way to every host's first byte
(bench/bench_probe_split.py; its name regexes alone compile in ~16 ms).

So where pyOpenSSL is absent, `cryptography.x509` is made unimportable while asyncssh's
package runs its imports: asyncssh fails the same optional import one line earlier, with the
same result (no `x509v3-*` algorithm offered, known_hosts lines with an X.509 subject
skipped), and host-key checking is exactly as before. Where pyOpenSSL is installed, or
`cryptography.x509` is loaded already, nothing is hidden. Afterwards `cryptography.x509`
imports as usual for anyone else.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any, cast

HIDDEN = "cryptography.x509"


# Plain classes, not importlib.abc's: the import system only calls these methods, and
# importing importlib.abc (with importlib.resources) cost every start ~1.5 ms.
class _Loader:
    """asyncssh's own loader, with `cryptography.x509` unimportable while it executes."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        hidden = HIDDEN not in sys.modules
        if hidden:
            sys.modules[HIDDEN] = None  # type: ignore[assignment]  # `import` raises ImportError
        try:
            self._loader.exec_module(module)
        finally:
            if hidden and sys.modules.get(HIDDEN, 0) is None:
                del sys.modules[HIDDEN]


class _Finder:
    """Finds `asyncssh` where the path finder does, and hands it the loader above."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "asyncssh" or HIDDEN in sys.modules:
            return None  # not ours, or X.509 is loaded already: nothing left to save
        if importlib.util.find_spec("OpenSSL") is not None:
            return None  # asyncssh can use X.509 here: leave its import alone
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return None
        spec.loader = cast(Any, _Loader(spec.loader))
        return spec


def install() -> None:
    """Before asyncssh is imported (idempotent; no effect once it is)."""
    if "asyncssh" not in sys.modules and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
