"""The `--save DIR` format: each host's raw outputs, one file per part, readable by eye.

    DIR/HOST/meta.json            state, error, and each section's exit status and parts
    DIR/HOST/SECTION.PART.txt     what that command printed (decoded as UTF-8, escapes
                                  and control characters made visible: gpudash.text.clean)

A part file can be fed straight to `gpudash parse` (e.g. `gpus.smi.txt` is an `nvidia-smi`
table), and `gpudash probe --replay DIR` reads the directory back without connecting.
Files are written 0600 in 0700 directories: outputs can name users, paths and hosts.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudash.model import NOT_SAVED, HostResult
from gpudash.probe.parts import Part
from gpudash.text import clean

META = "meta.json"


def host_dir_name(host: str) -> str:
    """A host label as one safe path component."""
    name = re.sub(r"[^\w.@+-]", "_", host).lstrip(".")
    return name or "_"


def save_host(root: Path, result: HostResult) -> Path:
    directory = root / host_dir_name(result.name)
    _mkdir_private(directory)
    sections: dict[str, Any] = {}
    for name, section in result.sections.items():
        if section.error == NOT_SAVED:
            continue  # replayed from a save that lacked it: a re-save lacks it too
        parts = {}
        for part in section.parts.values():
            label = part.name or "_stray"
            # Escapes neutralised: `cat` of a saved file must not retitle the terminal or
            # write the clipboard. The parsers drop escapes anyway, so a replay reads the same.
            _write_private(directory / f"{name}.{label}.txt", clean(part.text))
            parts[label] = part.rc
        sections[name] = {"rc": section.rc, "error": section.error, "parts": parts}
    meta = {
        "host": result.name,
        "state": result.state.value,
        "error": result.error,
        "sections": sections,
    }
    _write_private(directory / META, json.dumps(meta, indent=2) + "\n")
    return directory


@dataclass(frozen=True)
class SavedHost:
    host: str
    state: str
    error: str | None
    sections: dict[str, tuple[int | None, str | None, dict[str, Part]]]


def load_host(directory: Path) -> SavedHost:
    """Read one saved host back. Raises OSError/ValueError with the file named."""
    meta_path = directory / META
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{meta_path}: not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    # A saved dir may come from someone else: every value is checked, and names must be
    # plain file-name pieces, so a crafted meta.json cannot read files outside the dir.
    if not isinstance(meta, dict) or not isinstance(meta.get("sections") or {}, dict):
        raise ValueError(f"{meta_path}: not a gpudash --save meta.json")
    sections = {}
    for name, info in (meta.get("sections") or {}).items():
        if not _NAME.fullmatch(name) or not isinstance(info, dict):
            raise ValueError(f"{meta_path}: sections: bad entry {name!r}")
        labels = info.get("parts") or {}
        if not isinstance(labels, dict):
            raise ValueError(f"{meta_path}: sections.{name}.parts: not a table")
        parts = {}
        for label, rc in labels.items():
            if not _NAME.fullmatch(label):
                raise ValueError(f"{meta_path}: sections.{name}.parts: bad name {label!r}")
            path = directory / f"{name}.{label}.txt"
            text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
            key = "" if label == "_stray" else label
            parts[key] = Part(key, _rc(rc), text)
        error = info.get("error")
        sections[name] = (_rc(info.get("rc")), error if isinstance(error, str) else None, parts)
    error = meta.get("error")
    return SavedHost(
        str(meta.get("host", directory.name)),
        str(meta.get("state", "ready")),
        error if isinstance(error, str) else None,
        sections,
    )


_NAME = re.compile(r"\w[\w-]*(?:\.\w[\w-]*)*")


def _rc(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def saved_hosts(root: Path) -> list[Path]:
    """Host directories under a save root, sorted by name."""
    return sorted(p.parent for p in root.glob(f"*/{META}"))


def _mkdir_private(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
