"""The value checks of the config file: one function per shape of value, shared by every table.

A check takes the raw value tomllib produced and returns the value the dataclass field wants
(`identity_file = "~/k"` becomes `("/home/me/k",)`), or raises `Invalid` with the problem in TOML
words ("expected an integer, got a string") and, for a value inside an array or table, the key
path below it. The tables that say which key takes which check are `gpudash.config.schema`
(hosts, ui, keys), `gpudash.config.expect` (`[expect]`) and `gpudash.tasks.values` (tasks).

This is the bottom of the config checks: it imports only `gpudash.config.lines` (key paths and
TOML quoting) and the leaf `gpudash.files`, so every table, and gpudash.tasks, can import it
without a loop.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections.abc import Callable, Sequence

from gpudash.config.lines import KeyPath, quote
from gpudash.files import MiB, RefusedFile, check_regular
from gpudash.text import is_uint


class Invalid(ValueError):
    """A value the schema rejects. `at` locates it inside the value (an array index)."""

    def __init__(self, message: str, at: KeyPath = ()) -> None:
        super().__init__(message)
        self.message = message
        self.at = at


Check = Callable[[object], object]
"""A value check: the raw TOML value in, the checked value out, or `Invalid`."""

Report = Callable[[KeyPath, str], None]
"""Where checks send a problem: the key path it is about, and one line saying what is wrong."""


# --- words -----------------------------------------------------------------------------------


def toml_type(value: object) -> str:
    """The TOML name of a parsed value's type, with its article: "an integer", "a table"."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, dt.datetime):  # before date: datetime is a date subclass
        return "a date-time"
    if isinstance(value, dt.date):
        return "a date"
    if isinstance(value, dt.time):
        return "a time"
    return type(value).__name__


def show(value: object) -> str:
    """A value as TOML would spell it, escaped so that a problem always stays on one line."""
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return quote(str(value))[1:-1]


def suggest(word: str, choices: Sequence[str], *, value: bool = False) -> str:
    """ " (did you mean 'X'?)" for the nearest choice, or "" when none is near.

    Key names are quoted 'like this', values "like this", as the user would write them.
    """
    import difflib  # only for a mistake: a config without one does not load it

    near = difflib.get_close_matches(word, list(choices), n=1)
    if not near:
        return ""
    return f" (did you mean {show(near[0]) if value else repr(near[0])}?)"


def has_control(text: str) -> bool:
    """Control characters (C0, DEL, C1) would break a one-line report or a remote command."""
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)


# --- checks ----------------------------------------------------------------------------------


def text(value: object) -> str:
    """A non-empty string without control characters."""
    if not isinstance(value, str):
        raise Invalid(f"expected a string, got {toml_type(value)}")
    if not value:
        raise Invalid("must not be empty")
    if has_control(value):
        raise Invalid(f"contains a control character: {show(value)}")
    return value


def local_path(value: object) -> str:
    """A path on this machine: `~` expands here, not on the host."""
    return os.path.expanduser(text(value))


KEY_FILE_LIMIT = 4 * MiB
"""An identity_file or known_hosts larger than this is not one (a key is ~3 KB)."""


def local_file(value: object) -> str:
    """`local_path` of a file gpudash (or asyncssh) will read: if it exists, a regular file
    of sane size. A FIFO would hang the read past any connect_timeout, /dev/zero would fill
    memory: refused here, as one line naming the file."""
    path = local_path(value)
    try:
        check_regular(path, limit=KEY_FILE_LIMIT)
    except RefusedFile as exc:
        raise Invalid(str(exc)) from None
    return path


def url(value: object) -> str:
    """An http(s) URL that the probe fetches from the host to test its network."""
    checked = text(value)
    if not checked.startswith(("http://", "https://")) or any(c.isspace() for c in checked):
        raise Invalid(f"expected an http:// or https:// URL, got {show(checked)}")
    return checked


def choice(*allowed: str) -> Check:
    """One of `allowed`, spelled exactly."""

    def check(value: object) -> str:
        checked = text(value)
        if checked not in allowed:
            listed = ", ".join(show(a) for a in allowed)
            raise Invalid(
                f"unknown value {show(checked)}; expected one of {listed}"
                + suggest(checked, allowed, value=True)
            )
        return checked

    return check


def integer(low: int, high: int | None = None) -> Check:
    """An integer in `low..high` (no upper bound when `high` is None)."""

    def check(value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise Invalid(f"expected an integer, got {toml_type(value)}")
        if high is not None and not low <= value <= high:
            raise Invalid(f"must be between {low} and {high}, got {value}")
        if value < low:
            raise Invalid(f"must be at least {low}, got {value}")
        return value

    return check


def seconds(value: object) -> float:
    """A timeout: a finite number of seconds above zero (`inf` would never give up)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise Invalid(f"expected a number of seconds, got {toml_type(value)}")
    if not math.isfinite(value):
        raise Invalid(f"must be a finite number of seconds, got {show(value)}")
    if value <= 0:
        raise Invalid(f"must be > 0, got {show(value)}")
    return float(value)


def array(item: Check, *, or_one: bool = False, what: str = "strings") -> Check:
    """An array whose every element passes `item` (an error names the element's index);
    with `or_one`, a lone string is accepted. `what` names the elements in messages."""

    def check(value: object) -> tuple[object, ...]:
        if or_one and not isinstance(value, list):
            if not isinstance(value, str):
                raise Invalid(f"expected a string or an array of {what}, got {toml_type(value)}")
            return (item(value),)
        if not isinstance(value, list):
            raise Invalid(f"expected an array of {what}, got {toml_type(value)}")
        checked = []
        for index, element in enumerate(value):
            try:
                checked.append(item(element))
            except Invalid as exc:
                raise Invalid(exc.message, (index, *exc.at)) from None
        return tuple(checked)

    return check


def jump(value: object) -> str | None:
    """ProxyJump: a configured host's name or `[user@]host[:port]`; "" means connect directly.

    A chain is written by giving the bastion its own `jump`, not as "a,b": each hop is then a
    configured host whose own settings (user, key, host-key policy) apply.
    """
    if value == "":
        return None
    checked = text(value)
    if any(c.isspace() for c in checked) or "," in checked:
        raise Invalid(f"expected one host as [user@]host[:port], got {show(checked)}")
    host = checked.rpartition("@")[2]
    name, colon, port = host.rpartition(":")
    if colon and is_uint(port) and ":" not in name and not 1 <= int(port) <= 65535:
        raise Invalid(f"port must be between 1 and 65535, got {port}")
    if not host or host.startswith(":"):
        raise Invalid(f"no host in {show(checked)}")
    return checked


def interval(value: object) -> float:
    """A refresh interval: seconds above zero, or 0 for off."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    return seconds(value)


def key_list(value: object) -> str:
    """Keys as Textual names them, comma-separated: "r", "f5", "ctrl+r,f5"."""
    checked = text(value)
    parts = [part.strip() for part in checked.split(",")]
    if any(not part or any(c.isspace() for c in part) for part in parts):
        raise Invalid(f"expected key names separated by commas, got {show(checked)}")
    return ",".join(parts)


def boolean(value: object) -> bool:
    """`true` or `false`, nothing else (TOML has no truthy strings)."""
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {toml_type(value)}")
    return value


HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hf_repo(value: object) -> str:
    """A Hugging Face repo id, `org/name` (a task's `repo`, an `[expect]` table's `models`)."""
    checked = text(value)
    if not HF_REPO.match(checked) or ".." in checked:
        raise Invalid(f"expected a Hugging Face repo id like org/name, got {show(checked)}")
    return checked
