"""What a gpudash config file may say: tables of `key -> check`.

The schema is data so that a new setting, or a new top-level table, is one entry here rather
than a new branch in the validator. The checks themselves (one per shape of value) are in
`gpudash.config.values`; the `[expect]` table's keys in `gpudash.config.expect`.

This module knows nothing about files or line numbers: it reports `(key path, message)` pairs
through a callback, and `gpudash.config.load` turns them into `ConfigProblem` rows. That keeps the
checks testable on plain dicts and keeps line finding in one place (`gpudash.config.lines`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudash.config.lines import KeyPath
from gpudash.config.values import (
    Check,
    Invalid,
    Report,
    array,
    choice,
    integer,
    interval,
    jump,
    key_list,
    local_file,
    local_path,
    seconds,
    suggest,
    text,
    url,
)

if TYPE_CHECKING:
    from gpudash.config.expect import Expect


@dataclass(frozen=True)
class Key:
    """One TOML key: the dataclass field it fills and the check that converts its value."""

    field: str
    check: Check


# --- tables ----------------------------------------------------------------------------------

TRANSPORTS = ("ssh", "local", "replay")
HOST_KEY_POLICIES = ("strict", "accept-new", "insecure")


def _expect(value: object) -> Expect:
    """The `expect` key's check. gpudash.config.expect (with gpudash.versions) is imported
    only for a config that has one: the others (most `gpudash probe` runs) start ~3 ms sooner."""
    from gpudash.config.expect import parse_expect

    return parse_expect(value)


HOST_KEYS: Mapping[str, Key] = {
    "transport": Key("transport", choice(*TRANSPORTS)),
    "address": Key("address", text),
    "user": Key("user", text),
    "port": Key("port", integer(1, 65535)),
    "identity_file": Key("identity_files", array(local_file, or_one=True)),
    "jump": Key("jump", jump),
    "host_key_policy": Key("host_key_policy", choice(*HOST_KEY_POLICIES)),
    "known_hosts": Key("known_hosts", local_file),
    "tags": Key("tags", array(text)),
    "model_dirs": Key("model_dirs", array(text)),
    "venv_paths": Key("venv_paths", array(text)),
    "network_targets": Key("network_targets", array(url)),
    "connect_timeout": Key("connect_timeout", seconds),
    "probe_timeout": Key("probe_timeout", seconds),
    "section_timeout": Key("section_timeout", seconds),
    "replay_dir": Key("replay_dir", local_path),
    "expect": Key("expect", _expect),  # what the host should be
}
"""Keys of a `[hosts.NAME]` table, each also allowed in `[defaults]` for every host."""

FLEET_KEYS: Mapping[str, Key] = {
    "concurrency": Key("concurrency", integer(1)),
    "max_handshakes": Key("max_handshakes", integer(1)),
}
"""Keys that apply to the whole run, so only `[defaults]` may set them."""


UI_KEYS: Mapping[str, Key] = {
    "theme": Key("theme", text),
    "refresh": Key("refresh_s", interval),
    "save_dir": Key("save_dir", local_path),
}
"""Keys of `[ui]`: the Textual theme's name, the periodic re-probe interval in seconds
(0, the default, is off), and where `s` saves a host's raw outputs."""

KEY_IDS = (
    "refresh-host",
    "refresh-all",
    "fleet",
    "filter",
    "next-panel",
    "previous-panel",
    "expand",
    "save",
    "help",
    "quit",
    "toggle-nics",
    "fix",
    "fleet-sort",
    "fleet-reverse",
    "fleet-open",
    "fleet-close",
    "tasks",
    "mark",
    "task-cancel",
    "tasks-close",
)
"""Binding ids that `[keys]` may remap (`refresh-host = "f5"`); the app's key table uses the
same ids, and a test keeps the two lists equal."""

KEYS_KEYS: Mapping[str, Key] = {name: Key(name, key_list) for name in KEY_IDS}

TOP_LEVEL: Mapping[str, str] = {
    "defaults": "[defaults]",
    "hosts": "[hosts.NAME]",
    "ui": "[ui]",
    "keys": "[keys]",
    "tasks": "[tasks.NAME]",
    "expect": "[expect.TAG]",
}
"""Top-level tables, with how the docs write them. A new table (`[ui]`, `[tasks]`) is added
here, with its keys beside HOST_KEYS and one line in `check_document` to read it."""


def check_table(
    raw: Mapping[str, object],
    keys: Mapping[str, Key],
    path: KeyPath,
    report: Report,
    elsewhere: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Check each key of one table; returns `{field: value}` for the keys that passed.

    `elsewhere` names keys that are real but belong in another table, with a line saying
    where, so that a misplaced key gets a better answer than "did you mean".
    """
    elsewhere = elsewhere or {}
    fields: dict[str, object] = {}
    for key, value in raw.items():
        if key in keys:
            try:
                fields[keys[key].field] = keys[key].check(value)
            except Invalid as exc:
                report((*path, key, *exc.at), exc.message)
        elif key in elsewhere:
            report((*path, key), elsewhere[key])
        else:
            report((*path, key), "unknown key" + suggest(key, [*keys, *elsewhere]))
    return fields
