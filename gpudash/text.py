"""Untrusted text from hosts, made safe once at the parse boundary.

Remote output may carry ANSI/OSC escape sequences (title changes, clipboard writes, cursor
moves) and other control characters. `strip_escapes` removes escape sequences for parsing;
`clean` additionally neutralises every remaining control character so that the text can be
shown on a terminal literally, and shows the invisible characters that make text read other
than it is (bidi overrides and isolates, zero-width characters) as `<U+202E>`: "Trojan
Source", CVE-2021-42574 (https://trojansource.codes/trojan-source.pdf, section 3.1, lists
U+202A-U+202E and U+2066-U+2069; U+200E/U+200F/U+061C are the implicit marks of Unicode
UAX #9 rev 48 section 2; U+200B-U+200D, U+2060, U+FEFF the zero-width ones of Unicode 15
chapter 23.2), plus U+2028/U+2029, which some terminals and editors treat as line breaks.
"""

from __future__ import annotations

import re

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte ESC sequences, and
# 8-bit C1 CSI/OSC introducers. None spans a newline, so cleaning many lines at once equals
# cleaning each (an unterminated OSC cannot swallow the lines after it).
_ESCAPE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]          # CSI
    | \x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?   # OSC, ended by BEL or ST (or cut short)
    | \x1b[PX^_][^\x1b\n]*(?:\x1b\\)?  # DCS, SOS, PM, APC
    | \x1b[@-Z\\-_]                  # other Fe sequences
    | \x9b[0-?]*[ -/]*[@-~]          # 8-bit CSI
    | \x9d[^\x07\x9c\n]*(?:\x07|\x9c)? # 8-bit OSC
    """,
    re.VERBOSE,
)
# Leftovers of an escape whose ESC byte was lost in a paste: "[4m", "[0m".
_LEFTOVER_SGR = re.compile(r"\[[0-9;]{1,8}m")
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]"
)


def strip_escapes(text: str) -> str:
    """Remove terminal escape sequences (and their ESC-less leftovers) for parsing."""
    return _LEFTOVER_SGR.sub("", _ESCAPE.sub("", text))


def clean(text: str) -> str:
    """Text safe to display literally: escapes removed, other control characters shown
    as U+FFFD-free visible placeholders (`^[`-style), tabs and newlines kept.

    The placeholders are put in by `str.translate` (one pass in C, memory the size of the
    result), not a `sub` callback: that made a string object per control character, and
    5 MB of random bytes (~650 k of them) took a probe to 238 MiB."""
    text = _ESCAPE.sub("", text)
    if _CONTROL.search(text) is None:
        return text
    return text.translate(_PLACEHOLDERS)


def clean_line(text: str) -> str:
    """`clean` for one table cell or label: no tabs or newlines either."""
    return clean(text).replace("\t", " ").replace("\n", " ").replace("\r", "")


def _placeholders() -> dict[int, str]:
    """`_caret` of every character `_CONTROL` matches, for `str.translate`."""
    spans = [(0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), (0x061C, 0x061C), (0x200B, 0x200F)]
    spans += [(0x2028, 0x202E), (0x2060, 0x2060), (0x2066, 0x2069), (0xFEFF, 0xFEFF)]
    return {c: _caret(chr(c)) for lo, hi in spans for c in range(lo, hi + 1)}


def _caret(ch: str) -> str:
    code = ord(ch)
    if code == 0x0D:
        return ""
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code > 0xFF:
        return f"<U+{code:04X}>"
    return f"<{code:02x}>"


def decode(data: bytes) -> str:
    """Bytes from a host as text: invalid UTF-8 becomes U+FFFD, never an exception."""
    return data.decode("utf-8", errors="replace")


def is_uint(text: str) -> bool:
    """ASCII digits only: `str.isdigit` is also true for '¹' or '٣', which `int` refuses (or
    reads as a number no tool printed), so a hostile host's superscript crashed a parser."""
    return text.isascii() and text.isdigit()


_PLACEHOLDERS = _placeholders()
