"""The `--save DIR` format: each host's raw outputs, one file per part, readable by eye.

    DIR/HOST/meta.json            state, error, and each section's exit status and parts
    DIR/HOST/SECTION.PART.txt     what that command printed (decoded as UTF-8, escapes
                                  and control characters made visible: gpudash.text.clean)

A part file can be fed straight to `gpudash parse` (e.g. `gpus.smi.txt` is an `nvidia-smi`
table), and `gpudash probe --replay DIR` reads the directory back without connecting.
Files are written 0600 in 0700 directories: outputs can name users, paths and hosts.

A saved directory may come from someone else, and the save root may be shared, so both
directions are guarded (`gpudash.files`):
- saving builds the host's folder afresh (a new 0700 directory, each file O_CREAT|O_EXCL|
  O_NOFOLLOW) and only then swaps it in: a symlink planted in DIR/HOST/ is never written
  through, and a DIR/HOST that is itself a symlink is refused;
- loading reads only regular files that are in the host's folder (no symlink at the last
  component, no FIFO, no device), each capped (meta.json 1 MiB, a part 4x the live probe's
  4 Mi-character section cap, as `clean` may widen a character to four), and a section's
  text is cut at the live cap as the live stream would;
- a host name becomes a folder name by percent-escaping every byte outside [A-Za-z0-9.@+-_]
  (`a/b` -> `a%2Fb`, `a b` -> `a%20b`, `a:b` -> `a%3Ab`, `a_b` stays): one-to-one, so two
  hosts never share a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudash.files import MiB, RefusedFile, create_private, read_bytes
from gpudash.model import NOT_SAVED, HostResult
from gpudash.probe.parts import Part
from gpudash.probe.stream import MAX_SECTION_CHARS
from gpudash.text import clean

META = "meta.json"
META_LIMIT = 1 * MiB
PART_LIMIT = 4 * MAX_SECTION_CHARS  # bytes: a saved part is `clean`ed text of a capped section

_KEEP = re.compile(rb"[A-Za-z0-9.@+_-]")
_MAX_NAME = 200  # well under NAME_MAX (255 bytes on every common filesystem)


def host_dir_name(host: str) -> str:
    """A host label as one safe path component, distinct for distinct labels.

    Percent-escaping is one-to-one (`%` itself is escaped), so `a/b`, `a_b`, `a b` and
    `a:b` get four folders. A leading `.` is escaped too (no hidden or `..` folder); a
    name too long for a path component keeps its head and gains a hash of the whole."""
    raw = host.encode("utf-8", errors="surrogatepass")
    name = "".join(chr(b) if _KEEP.fullmatch(bytes([b])) else f"%{b:02X}" for b in raw)
    if name.startswith("."):
        name = "%2E" + name[1:]
    if not name:
        return "%"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        head = name[: _MAX_NAME - 17]
        cut = head.rfind("%", len(head) - 2)  # never half an escape
        name = (head[:cut] if cut >= 0 else head) + "~" + digest
    return name


def save_host(root: Path, result: HostResult) -> Path:
    """Write `result` to ROOT/<host_dir_name>/, replacing an earlier save of that host.
    Raises OSError (RefusedFile when ROOT/HOST is a symlink or not a directory)."""
    directory = root / host_dir_name(result.name)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_replaceable(directory)
    staging = Path(tempfile.mkdtemp(prefix=".saving-", dir=root))  # 0700, O_EXCL semantics
    try:
        _fill(staging, result)
        _swap_in(staging, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def _check_replaceable(directory: Path) -> None:
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise RefusedFile(directory, f"{kind}: not written through")


def _swap_in(staging: Path, directory: Path) -> None:
    """Put the finished folder in place; an earlier save of the host is removed after."""
    old = None
    if os.path.lexists(directory):
        _check_replaceable(directory)
        old = Path(tempfile.mkdtemp(prefix=".replaced-", dir=directory.parent))
        os.rename(directory, old / "old")
    os.rename(staging, directory)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)  # rmtree never follows a symlink


def _fill(directory: Path, result: HostResult) -> None:
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


@dataclass(frozen=True)
class SavedHost:
    host: str
    state: str
    error: str | None
    sections: dict[str, tuple[int | None, str | None, dict[str, Part]]]


def load_host(directory: Path) -> SavedHost:
    """Read one saved host back. Raises OSError/ValueError with the file named (RefusedFile
    for a symlink, a FIFO, a device or a file past its cap)."""
    meta_path = directory / META
    try:
        meta = json.loads(read_bytes(meta_path, limit=META_LIMIT, follow=False))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{meta_path}: not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    except (RecursionError, UnicodeDecodeError):
        raise ValueError(f"{meta_path}: not a gpudash --save meta.json") from None
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
        room = MAX_SECTION_CHARS  # the live stream's cap, over the section's parts
        for label, rc in labels.items():
            if not _NAME.fullmatch(label):
                raise ValueError(f"{meta_path}: sections.{name}.parts: bad name {label!r}")
            text = _read_part(directory / f"{name}.{label}.txt")[:room]
            room -= len(text)
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


def _read_part(path: Path) -> str:
    """A part's text; a part listed in meta.json but absent reads as empty."""
    try:
        data = read_bytes(path, limit=PART_LIMIT, follow=False)
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="replace")


_NAME = re.compile(r"\w[\w-]*(?:\.\w[\w-]*)*")


def _rc(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def saved_hosts(root: Path) -> list[Path]:
    """Host directories under a save root, sorted by name: real directories only (a symlink
    to a folder elsewhere is not a saved host), each with a meta.json."""
    found = []
    for entry in os.scandir(root):
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        if os.path.lexists(os.path.join(entry.path, META)):
            found.append(Path(entry.path))
    return sorted(found)


def _write_private(path: Path, text: str) -> None:
    create_private(path, text.encode("utf-8", errors="surrogateescape"))
