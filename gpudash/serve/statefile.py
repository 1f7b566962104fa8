"""The serve state file, `$HOME/.cache/gpudash/serve/<TASK>.json` (schema 1 of
notes/serve-contract.md): what the supervisor knows, rewritten at each phase change and at
the end, read back by the probe's serve section. Dir 0700, file 0600, written tmp + rename so
a reader never sees half a file.

Travels to the host: stdlib only, Python 3.9+.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

SCHEMA = 1


def path_for(task: str, home: str | None = None) -> str:
    home = home or os.path.expanduser("~")
    return os.path.join(home, ".cache", "gpudash", "serve", f"{task}.json")


class State:
    """The state object and its file. Every field of the contract is always present."""

    def __init__(self, task: str, path: str | None = None, **fields: Any) -> None:
        self.path = path or path_for(task)
        now = time.time()
        self.data: dict[str, Any] = {
            "schema": SCHEMA,
            "task": task,
            "engine": None,
            "model": None,
            "name": None,
            "port": None,
            "tp": None,
            "pid": None,
            "pgid": None,
            "started": now,
            "updated": now,
            "state": "starting",
            "phase": "launch",
            "phases": {},
            "ready": None,
            "failure": None,
            "command": [],
            "log": None,
        }
        self.data.update(fields)

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.write()

    def write(self) -> None:
        """tmp + rename; a full disk or a read-only home is not the engine's failure, so an
        error here is printed once and otherwise ignored."""
        self.data["updated"] = time.time()
        folder = os.path.dirname(self.path)
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.data, f, indent=1, sort_keys=True)
                f.write("\n")
            os.replace(tmp, self.path)
        except OSError as exc:
            if not getattr(self, "_warned", False):
                print(f"gpudash-serve: cannot write {self.path}: {exc}", flush=True)
                self._warned = True
