"""Find the line on which each key of a TOML document is written.

tomllib returns plain dicts and forgets where anything came from, so a problem found while
validating ("port out of range") would have no line to point at. This module re-reads the
source text with a small scanner that knows just enough TOML to map key paths to lines:
`[table]` and `[[array]]` headers with bare, quoted and dotted keys, `a.b = 1` dotted keys,
inline tables `hosts.a = { port = 22 }`, arrays (whose elements get an index in the path) and
every string form, so a `#` or `=` inside a string does not fool it.

It only runs on text that tomllib has already accepted, so it need not report syntax errors.
Whenever it is unsure (it stumbles, sees one path twice, or records a path the parsed document
does not have) it gives up and returns no lines at all: a problem without a line number is
honest, a problem with the wrong one sends the reader to the wrong place.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PathPart = str | int
KeyPath = tuple[PathPart, ...]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SCALAR_END = frozenset(",]}#\n")


class _Confused(Exception):
    """The scanner met text it does not understand; callers drop every line."""


@dataclass
class KeyLines:
    """Line numbers (1-based) of the key paths written in one document."""

    defined: dict[KeyPath, int] = field(default_factory=dict)
    """Where a path is written out: a `key =`, a `[header]` or an array element."""

    implied: dict[KeyPath, int] = field(default_factory=dict)
    """First line that names a table only as the prefix of a dotted key or header."""

    def line(self, path: KeyPath) -> int | None:
        """The line of `path`, or None where it is not written in the text."""
        return self.defined.get(path) or self.implied.get(path)


def key_lines(text: str, parsed: Mapping[str, object]) -> KeyLines:
    """Map the key paths in `text` (already parsed by tomllib into `parsed`) to lines."""
    scanner = _Scanner(text)
    try:
        scanner.document()
    except (_Confused, IndexError):
        return KeyLines()
    found = scanner.lines
    if any(not _exists(parsed, path) for path in [*found.defined, *found.implied]):
        return KeyLines()
    return found


def _exists(data: object, path: KeyPath) -> bool:
    for part in path:
        if isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
            continue
        if not (isinstance(data, dict) and isinstance(part, str) and part in data):
            return False
        data = data[part]
    return True


class _Scanner:
    """A recursive-descent reader over valid TOML that records where keys are written."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.lineno = 1
        self.lines = KeyLines()
        self._array_tables: dict[KeyPath, int] = {}

    # --- recording ---------------------------------------------------------------------------

    def define(self, path: KeyPath, line: int) -> None:
        if path in self.lines.defined:
            raise _Confused(f"{path} written twice")
        self.lines.defined[path] = line

    def imply(self, path: KeyPath, line: int) -> None:
        self.lines.implied.setdefault(path, line)

    # --- characters --------------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> str:
        index = self.pos + ahead
        return self.text[index] if index < len(self.text) else ""

    def advance(self, count: int = 1) -> None:
        self.lineno += self.text.count("\n", self.pos, self.pos + count)
        self.pos += count

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise _Confused(f"expected {char!r} at line {self.lineno}")
        self.advance()

    def skip_space(self) -> None:
        while self.peek() in (" ", "\t", "\r") and self.peek():
            self.advance()

    def skip_blank(self) -> None:
        """Skip spaces, newlines and comments (between statements and inside arrays)."""
        while True:
            self.skip_space()
            if self.peek() == "#":
                while self.peek() not in ("\n", ""):
                    self.advance()
            elif self.peek() == "\n":
                self.advance()
            else:
                return

    # --- grammar -----------------------------------------------------------------------------

    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.skip_blank()
            if not self.peek():
                return
            line = self.lineno
            if self.peek() == "[" and self.peek(1) == "[":
                self.advance(2)
                key = self.key()
                self.expect("]")
                self.expect("]")
                index = self._array_tables.get(key, -1) + 1
                self._array_tables[key] = index
                self._imply_prefixes(key, line)
                self.imply(key, line)
                table = (*key, index)
                self.define(table, line)
            elif self.peek() == "[":
                self.advance()
                key = self.key()
                self.expect("]")
                self._imply_prefixes(key, line)
                table = key
                self.define(table, line)
            else:
                self.key_value(table)

    def _imply_prefixes(self, path: KeyPath, line: int) -> None:
        for end in range(1, len(path)):
            self.imply(path[:end], line)

    def key_value(self, table: KeyPath) -> None:
        line = self.lineno
        key = self.key()
        self.expect("=")
        self.skip_space()
        path = (*table, *key)
        for end in range(len(table) + 1, len(path)):
            self.imply(path[:end], line)
        self.define(path, line)
        self.value(path)

    def key(self) -> tuple[str, ...]:
        parts = []
        while True:
            self.skip_space()
            parts.append(self.simple_key())
            self.skip_space()
            if self.peek() != ".":
                return tuple(parts)
            self.advance()

    def simple_key(self) -> str:
        char = self.peek()
        if char == '"':
            return self.basic_string()
        if char == "'":
            return self.literal_string()
        start = self.pos
        while self.peek() in _BARE and self.peek():
            self.advance()
        if self.pos == start:
            raise _Confused(f"no key at line {self.lineno}")
        return self.text[start : self.pos]

    def value(self, path: KeyPath) -> None:
        char = self.peek()
        if self.text.startswith('"""', self.pos):
            self.multiline_string('"')
        elif self.text.startswith("'''", self.pos):
            self.multiline_string("'")
        elif char == '"':
            self.basic_string()
        elif char == "'":
            self.literal_string()
        elif char == "[":
            self.array(path)
        elif char == "{":
            self.inline_table(path)
        else:
            start = self.pos
            while self.peek() not in _SCALAR_END and self.peek():
                self.advance()
            if not self.text[start : self.pos].strip():
                raise _Confused(f"no value at line {self.lineno}")

    def array(self, path: KeyPath) -> None:
        self.expect("[")
        index = 0
        while True:
            self.skip_blank()
            if self.peek() == "]":
                self.advance()
                return
            self.define((*path, index), self.lineno)
            self.value((*path, index))
            self.skip_blank()
            if self.peek() == ",":
                self.advance()
            index += 1

    def inline_table(self, path: KeyPath) -> None:
        self.expect("{")
        while True:
            self.skip_blank()
            if self.peek() == "}":
                self.advance()
                return
            self.key_value(path)
            self.skip_blank()
            if self.peek() == ",":
                self.advance()

    def basic_string(self) -> str:
        self.expect('"')
        start = self.pos
        while self.peek() != '"':
            if not self.peek() or self.peek() == "\n":
                raise _Confused(f"unterminated string at line {self.lineno}")
            self.advance(2 if self.peek() == "\\" else 1)
        raw = self.text[start : self.pos]
        self.advance()
        return _unescape(raw)

    def literal_string(self) -> str:
        self.expect("'")
        end = self.text.find("'", self.pos)
        if end < 0 or "\n" in self.text[self.pos : end]:
            raise _Confused(f"unterminated string at line {self.lineno}")
        raw = self.text[self.pos : end]
        self.advance(end + 1 - self.pos)
        return raw

    def multiline_string(self, quote: str) -> None:
        self.advance(3)
        while True:
            char = self.peek()
            if not char:
                raise _Confused("unterminated multi-line string")
            if quote == '"' and char == "\\":
                self.advance(2)
            elif char == quote and self.text.startswith(quote * 3, self.pos):
                run = 3
                while self.peek(run) == quote and run < 5:
                    run += 1
                self.advance(run)
                return
            else:
                self.advance()


def _unescape(raw: str) -> str:
    """Decode a basic-string key the way tomllib does, so quoted names match the parsed dict."""
    if "\\" not in raw:
        return raw
    return str(tomllib.loads(f'k = "{raw}"')["k"])


def render_path(path: KeyPath) -> str:
    """A key path as TOML writes it: `hosts."gpu box".port`, with `[i]` for array elements.

    Names that are not bare keys are quoted and escaped, so the result is one line always.
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        bare = bool(part) and all(c in _BARE for c in part)
        name = part if bare else quote(part)
        out += f".{name}" if out else name
    return out


def quote(text: str) -> str:
    """`text` as a TOML basic string, with every character that could end a line escaped.

    json.dumps leaves DEL, the C1 controls (U+0085 is a line break to `str.splitlines`) and
    U+2028/U+2029 alone; a problem row must stay one line whatever the user wrote.
    """
    return "".join(
        f"\\u{ord(c):04x}" if 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" else c
        for c in json.dumps(text, ensure_ascii=False)
    )
