"""The framing of probe output: sections, and named parts inside a section.

Every marker carries the probe's random nonce, so text printed by a remote tool can never
forge one. Inside a section the shell helper `part NAME CMD...` prints

    @@gpudash:<nonce>:part:NAME
    <CMD's stdout and stderr>
    @@gpudash:<nonce>:rc:NAME:<exit status>

(with one newline added before the rc marker, which `split_parts` removes again).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

MARK = "@@gpudash"


@dataclass(frozen=True)
class Part:
    """One command's output inside a section; rc None when it was cut off (timeout)."""

    name: str
    rc: int | None
    text: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


def split_parts(section_text: str, nonce: str) -> dict[str, Part]:
    """Split a section's raw output into its parts. Never raises; text outside any part
    is kept under the name "" so nothing is lost."""
    begin = re.compile(rf"^{MARK}:{re.escape(nonce)}:part:([\w.-]+)$")
    end = re.compile(rf"^{MARK}:{re.escape(nonce)}:rc:([\w.-]+):(-?\d+)$")
    parts: dict[str, Part] = {}
    stray: list[str] = []
    name: str | None = None
    lines: list[str] = []
    for line in section_text.split("\n"):
        if m := begin.match(line):
            if name is not None:  # previous part never ended
                parts[name] = Part(name, None, "\n".join(lines))
            name, lines = m.group(1), []
        elif (m := end.match(line)) and name is not None and name == m.group(1):
            text = "\n".join(lines)
            if text.endswith("\n"):
                text = text[:-1]
            parts[name] = Part(name, int(m.group(2)), text)
            name, lines = None, []
        elif name is None:
            stray.append(line)
        else:
            lines.append(line)
    if name is not None:
        parts[name] = Part(name, None, "\n".join(lines))
    rest = "\n".join(stray).strip("\n")
    if rest:
        parts[""] = Part("", None, rest)
    return parts


def text_of(parts: Mapping[str, Part], name: str) -> str:
    """A part's text, or "" when the part is absent."""
    part = parts.get(name)
    return part.text if part else ""
