"""Read a probe's output stream back into sections, as each one arrives.

The stream is untrusted bytes: it is decoded incrementally (invalid UTF-8 becomes U+FFFD),
and only lines that carry this probe's nonce are markers. A section's text is capped so a host
printing gigabytes cannot exhaust memory; the cap is noted, never silent.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

MAX_SECTION_CHARS = 2 * 1024 * 1024
MAX_LINE_CHARS = 64 * 1024
NOTE = "@note"
"""The name of a RawSection that is a note on the host, not a section (its text says what)."""
NOTES = {
    "notimeout": "no `timeout` on the host's PATH: sections ran under a shell kill timer",
    "nosetsid": "no `timeout` nor `setsid` on the host's PATH: a timed-out section's shell was"
    " stopped, but tools it started may still run",
}


@dataclass(frozen=True)
class RawSection:
    """One section's raw text as the host printed it, with the section script's exit status."""

    name: str
    rc: int | None
    text: str
    truncated: bool = False


class FrameReader:
    """Feed bytes in, get finished sections out."""

    def __init__(self, nonce: str) -> None:
        mark = re.escape(f"@@gpudash:{nonce}")
        self._begin = re.compile(rf"^{mark}:begin:([\w.-]+)$")
        self._end = re.compile(rf"^{mark}:end:([\w.-]+):(-?\d+)$")
        self._fatal = re.compile(rf"^{mark}:fatal:(\w+)$")
        self._start = f"@@gpudash:{nonce}:start"
        self._exit = re.compile(rf"^{mark}:exit:(\d+)$")
        self._note = re.compile(rf"^{mark}:note:(\w+)$")
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._overlong = False
        self._full = False
        self._current: str | None = None
        self._lines: list[str] = []
        self._size = 0
        self._truncated = False
        self.fatal: str | None = None
        self.stray = 0
        self.started = False
        """The script's start marker arrived: the script really ran."""
        self.exited: int | None = None
        """The script's exit marker arrived (with how many sections it reported)."""
        self.notes: list[str] = []
        self.first_line = ""
        """The first non-blank line printed outside any section: for a host whose script
        never started, the remote's own error (nologin, a refused or mangled command)."""

    def feed(self, data: bytes) -> list[RawSection]:
        return self._lines_in(self._decoder.decode(data))

    def finish(self) -> list[RawSection]:
        """End of stream: flush the decoder; a section cut off midway is returned with rc None."""
        done = self._lines_in(self._decoder.decode(b"", final=True) + "\n")
        if self._current is not None:
            done.append(self._emit(None))
        return done

    def _lines_in(self, text: str) -> list[RawSection]:
        done: list[RawSection] = []
        text = self._pending + text
        if self._full and "@@gpudash:" not in text and "\n" in text:
            # a flood past the cap: drop its lines unsplit (a marker's start stays pending)
            text, self._overlong = text[text.rfind("\n") + 1 :], False
        *lines, pending = text.split("\n")
        if self._overlong:  # inside a line already cut: its rest is dropped up to its newline
            if lines:
                lines, self._overlong = lines[1:], False
            else:
                pending = ""
        for line in lines:
            if section := self._line(line.removesuffix("\r") if self._is_marker(line) else line):
                done.append(section)
        if len(pending) > MAX_LINE_CHARS:  # an endless line: keep its head, drop the rest
            self._line(pending)
            pending, self._overlong = "", True
        self._pending = pending
        return done

    @staticmethod
    def _is_marker(line: str) -> bool:
        return line.startswith("@@gpudash:")

    def _line(self, line: str) -> RawSection | None:
        if not line.startswith("@@gpudash:"):  # the common case, and a flood's: no regex
            self._content(line)
            return None
        if m := self._begin.match(line):
            cut_off = self._emit(None) if self._current is not None else None
            self._current, self._lines, self._size, self._truncated = m.group(1), [], 0, False
            self._full = False
            return cut_off
        if (m := self._end.match(line)) and m.group(1) == self._current:
            return self._emit(int(m.group(2)))
        if m := self._fatal.match(line):
            self.fatal = m.group(1)
            return None
        if line == self._start:
            self.started = True
            return None
        if m := self._exit.match(line):
            self.exited = int(m.group(1))
            return None
        if m := self._note.match(line):
            self.notes.append(m.group(1))
            return None
        self._content(line)  # a marker of another nonce is text like any other
        return None

    def _content(self, line: str) -> None:
        """Keep the line within the caps; anything cut marks the section truncated."""
        if self._current is None:
            self.stray += 1
            if not self.first_line and line.strip():
                self.first_line = line.strip()[:200]
        elif self._full or self._size + len(line) > MAX_SECTION_CHARS:
            self._full = self._truncated = True  # keep the head: one unbroken stretch
        else:
            if len(line) > MAX_LINE_CHARS:
                line, self._truncated = line[:MAX_LINE_CHARS], True
            self._lines.append(line)
            self._size += len(line) + 1

    def _emit(self, rc: int | None) -> RawSection:
        text = "\n".join(self._lines)
        if rc is not None and text.endswith("\n"):
            text = text[:-1]  # the newline the script adds before the end marker
        section = RawSection(self._current or "", rc, text, self._truncated)
        self._current, self._lines, self._size = None, [], 0
        return section
