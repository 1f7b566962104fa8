"""Task output as lines: `\r` progress collapsed in place, escapes cleaned, secrets masked;
and the local copy of every task log under `$XDG_STATE_HOME/gpudash/logs/HOST/`.

The byte stream from the host is cut at arbitrary points (a reconnect, a 64 KiB read), so the
assembler keeps the undecoded tail, the unfinished line and a pending `\r` between chunks.
"""

from __future__ import annotations

import codecs
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from gpudash.text import clean

TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{30,}")
MASK = "********"
PARTIAL_CHARS = 4096
"""How much of an unfinished line `partial` shows: its head. Rebuilding (and cleaning and
masking) the whole unfinished line on every chunk made a 32 MB line without a newline
quadratic (28 s; issue 20); the head of a line that long is shown once and kept."""
LINE_CHARS = 65536
"""How much of one line is kept: the rest is counted, not stored. A task printing 4 MB of
NUL bytes without a newline took gpudash to 337 MB (each cleaned `^@` its own string;
issue 32); a log line past 64 Ki characters is not read by anyone, and an endless one must
not grow gpudash."""


class Masker:
    """Replaces each secret value, and anything shaped like an HF token, with a mask."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return TOKEN.sub("hf_" + MASK, text)

    @property
    def reach(self) -> int:
        """Characters past a cut that a secret or token starting before it may span: a line
        is masked with this much beyond its cut, so no secret is shown half."""
        return max((len(s) for s in self._secrets), default=0) + 64


class LineAssembler:
    """Bytes in, finished lines out; `partial` is the unfinished line's latest state.

    A `\r` not followed by `\n` starts its line over (pip, uv, hf and tqdm bars), so a line
    that was redrawn a thousand times comes out once, as its last state.
    """

    def __init__(self, mask: Masker | None = None) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line: list[str] = []
        self._len = 0  # characters in _line
        self._head: str | None = None  # `partial` of a line past PARTIAL_CHARS, made once
        self._cr = False
        self._mask = mask or Masker()
        self._keep = LINE_CHARS + self._mask.reach
        self._dropped = 0  # characters of this line past `_keep`, counted only

    def feed(self, data: bytes, *, final: bool = False) -> list[str]:
        """The lines this chunk finished, cleaned and masked as one block: a busy task sends
        chunks of thousands of lines, and three regex passes per line stalled the app."""
        segments = self._decoder.decode(data, final).split("\n")
        finished: list[str] = []
        long: dict[int, int] = {}  # index in finished -> characters the line had
        for i, segment in enumerate(segments):
            if i:
                self._finish(finished, long)
            if "\r" in segment or self._cr:
                self._overwrite(segment)
            elif segment:
                self._add(segment)
        if final and self._line:
            self._finish(finished, long)
        if not finished:
            return []
        lines = self._mask(clean("\n".join(finished))).split("\n")
        for at, size in long.items():
            lines[at] = f"{lines[at][:LINE_CHARS]} … ({size - LINE_CHARS} more characters)"
        return lines

    def _finish(self, finished: list[str], long: dict[int, int]) -> None:
        if self._len + self._dropped > LINE_CHARS:
            long[len(finished)] = self._len + self._dropped
        finished.append("".join(self._line))
        self._restart()
        self._cr = False

    def _overwrite(self, segment: str) -> None:
        """Apply a piece of one line in which `\r` (here or pending from the last chunk)
        starts the line over once more text follows it."""
        for j, piece in enumerate(segment.split("\r")):
            if j:
                self._cr = True
            if piece:
                if self._cr:
                    self._restart()
                self._cr = False
                self._add(piece)

    def _restart(self) -> None:
        self._line, self._len, self._head, self._dropped = [], 0, None, 0

    def _add(self, piece: str) -> None:
        room = self._keep - self._len
        if len(piece) > room:
            self._dropped += len(piece) - max(room, 0)
            piece = piece[: max(room, 0)]
            if not piece:
                return
        self._line.append(piece)
        self._len += len(piece)

    @property
    def partial(self) -> str:
        if self._len <= PARTIAL_CHARS:
            return self._mask(clean("".join(self._line)))
        if self._head is None:  # once per long line: its head no longer changes
            head, size = [], 0
            for piece in self._line:
                head.append(piece)
                size += len(piece)
                if size > PARTIAL_CHARS:
                    break
            self._head = self._mask(clean("".join(head)[:PARTIAL_CHARS])) + " …"
        return self._head


def state_home() -> Path:
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg)
    return Path.home() / ".local" / "state"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@-]", "_", name).lstrip(".") or "_"


class TaskLog:
    """One run's local log file: directory 0700, file 0600, lines already masked."""

    def __init__(self, host: str, task: str, *, when: float | None = None) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when or time.time()))
        logs = state_home() / "gpudash" / "logs"
        directory = logs / _safe(host)
        for folder in (logs.parent, logs, directory):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for folder in (logs, directory):
            os.chmod(folder, 0o700)
        path = directory / f"{_safe(task)}-{stamp}.log"
        n = 1
        while path.exists():
            n += 1
            path = directory / f"{_safe(task)}-{stamp}-{n}.log"
        self.path = path
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_EXCL, 0o600)
        self._file = os.fdopen(fd, "w", encoding="utf-8", errors="replace")

    def write(self, lines: Iterable[str]) -> None:
        for line in lines:
            self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
