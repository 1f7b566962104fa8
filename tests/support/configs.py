"""The one way a test writes a gpudash config table: `host_table(name, **keys)`.

Tests used to spell `[hosts.NAME]` tables by hand, each with its own quoting; a host that
reaches the test sshd is `Sshd.host_toml(host, **extra)` and a rig host's is
`NetRig.config_toml(...)`, both built on this. Values are written as JSON, which TOML reads
the same for strings, numbers, booleans and lists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path


def toml_value(value: object) -> str:
    return json.dumps(value)


def table(header: str, keys: Mapping[str, object]) -> str:
    """`[HEADER]` and one `key = value` line per key."""
    return f"[{header}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in keys.items())


def host_table(name: str, **keys: object) -> str:
    """A `[hosts.NAME]` table."""
    return table(f"hosts.{name}", keys)


def write_config(path: Path, *parts: str) -> Path:
    """The config file of `parts` (tables, each a string), a blank line between them."""
    path.write_text("\n".join(part if part.endswith("\n") else part + "\n" for part in parts))
    return path
