"""Check a parsed config document as a whole: tables, host names, inheritance, jumps.

`gpudash.config.schema` checks one table's keys; this module walks the document: it checks
`[defaults]` once (so a bad default is one problem, not one per host), lays each host's own
keys over the defaults, and then checks what no single key can show: a replay host without
its directory, a jump through the host itself or around a cycle, names that clash.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, cast

from gpudash.config.lines import KeyPath, render_path
from gpudash.config.ranges import expand
from gpudash.config.schema import (
    FLEET_KEYS,
    HOST_KEYS,
    KEYS_KEYS,
    TOP_LEVEL,
    UI_KEYS,
    Key,
    check_table,
)
from gpudash.config.values import Report, has_control, show, suggest, toml_type

if TYPE_CHECKING:
    from gpudash.config.expect import Expect
    from gpudash.tasks.spec import TaskSpec

_TOML_KEY = {key.field: name for name, key in HOST_KEYS.items()}
_FLEET_FIELDS = {key.field for key in FLEET_KEYS.values()}
_FLEET_ONLY = {
    name: "only allowed in [defaults]: it applies to the whole run" for name in FLEET_KEYS
}
_IN_A_TABLE = "belongs in [defaults] or a [hosts.NAME] table"


@dataclass(frozen=True)
class Checked:
    """The document after checking: fleet-wide fields and each host's merged fields."""

    fleet: dict[str, object]
    hosts: list[tuple[str, dict[str, object]]]
    ui: dict[str, object] = field(default_factory=dict)
    keys: dict[str, object] = field(default_factory=dict)
    tasks: Mapping[str, object] = field(default_factory=dict)
    """Checked task specs by name (the built-ins, with `[tasks.NAME]` laid over them)."""


class BuiltinTasks(Mapping[str, object]):
    """The built-in task specs, checked on first use.

    A config without `[tasks]` or `[keys]` cannot make a built-in task wrong, and most runs
    (`gpudash probe`, `check`) never look at one: importing and checking them cost every
    start ~11 ms before the first connection (2-vCPU development VM)."""

    def __init__(self) -> None:
        self._specs: Mapping[str, object] | None = None

    def _loaded(self) -> Mapping[str, object]:
        if self._specs is None:
            from gpudash.tasks.spec import check_tasks

            self._specs = check_tasks({}, _builtin_problem)
        return self._specs

    def __getitem__(self, name: str) -> object:
        return self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def keys_by_task(self) -> dict[str, str | None]:
        """Each task's key, without checking the specs: the first findings want only these,
        and the check costs more than reading them."""
        return dict(builtin_task_keys())


@cache
def builtin_task_keys() -> Mapping[str, str | None]:
    """Each built-in task's key, as builtin.toml writes it."""
    from gpudash.tasks.builtin import builtin_tables

    keys = {name: table.get("key") for name, table in builtin_tables().items()}
    return {name: key if isinstance(key, str) else None for name, key in keys.items()}


def _builtin_problem(path: KeyPath, message: str) -> None:
    raise RuntimeError(f"gpudash's built-in tasks: {render_path(path)}: {message}")


@dataclass
class _Host:
    name: str
    own: dict[str, object]
    defaults: dict[str, object]

    @property
    def fields(self) -> dict[str, object]:
        return {**self.defaults, **self.own}

    def origin(self, field: str) -> KeyPath:
        """The key path that set `field` for this host: its own table, or `[defaults]`."""
        if field in self.own:
            return ("hosts", self.name, _TOML_KEY[field])
        return ("defaults", _TOML_KEY[field])


def check_document(data: Mapping[str, object], report: Report) -> Checked:
    """Check everything in `data`, reporting each problem; returns the fields that passed."""
    for key in data:
        if key not in TOP_LEVEL:
            if key in HOST_KEYS or key in FLEET_KEYS:
                report((key,), _IN_A_TABLE)
            else:
                # The host tables are what a stray table usually meant; [ui] and [keys]
                # still come up through the suggestion.
                expected = " or ".join(TOP_LEVEL[t] for t in ("defaults", "hosts"))
                report((key,), f"unknown table{suggest(key, list(TOP_LEVEL))}; expected {expected}")

    raw_defaults = data.get("defaults", {})
    if not isinstance(raw_defaults, dict):
        report(("defaults",), f"expected a table, got {toml_type(raw_defaults)}")
        raw_defaults = {}
    defaults = check_table(raw_defaults, {**HOST_KEYS, **FLEET_KEYS}, ("defaults",), report)
    fleet = {field: defaults.pop(field) for field in _FLEET_FIELDS if field in defaults}

    ui = _check_plain_table(data, "ui", UI_KEYS, report)
    keys = _check_plain_table(data, "keys", KEYS_KEYS, report)

    tasks = _check_tasks(data, keys, report)

    raw_hosts = data.get("hosts")
    if raw_hosts is None or raw_hosts == {}:
        report(("hosts",), "no hosts defined; add a [hosts.NAME] table")
        return Checked(fleet, [], ui, keys, tasks)
    if not isinstance(raw_hosts, dict):
        report(("hosts",), f"expected a table of [hosts.NAME] tables, got {toml_type(raw_hosts)}")
        return Checked(fleet, [], ui, keys, tasks)

    hosts: list[_Host] = []
    folded: dict[str, str] = {}
    for name, raw in raw_hosts.items():
        path: KeyPath = ("hosts", name)
        named = _check_name(name, path, folded, report)
        if not isinstance(raw, dict):
            report(path, f"expected a table, got {toml_type(raw)}")
            continue
        own = check_table(raw, HOST_KEYS, path, report, elsewhere=_FLEET_ONLY)
        if named:
            hosts += _expanded(name, own, defaults, path, report)

    for host in hosts:
        _check_host(host, report)
    _check_jumps(hosts, report)
    if not isinstance(tasks, BuiltinTasks):
        from gpudash.tasks.copy.params import check_hosts as check_copy_sources

        # a config's own tasks are TaskSpecs (check_tasks); only the built-ins are lazy
        check_copy_sources(cast("Mapping[str, TaskSpec]", tasks), [h.name for h in hosts], report)
    by_tag = _check_expect_tags(data, report)
    return Checked(
        fleet, [(host.name, _expect_merged(host, by_tag)) for host in hosts], ui, keys, tasks
    )


def _check_tasks(
    data: Mapping[str, object], keys: Mapping[str, object], report: Report
) -> Mapping[str, object]:
    """The built-in tasks with `[tasks.NAME]` laid over them; left unchecked until used when
    the config has no `[tasks]` or `[keys]` to clash with them."""
    if "tasks" not in data and not keys:
        return BuiltinTasks()
    # here, not at the top: the one upward import of the config (tests/unit/test_import_graph.py),
    # paid for only by a config with [tasks] or [keys]
    from gpudash.config.keys import check_task_keys
    from gpudash.tasks.spec import check_tasks

    tasks: dict[str, object] = dict(check_tasks(data.get("tasks", {}), report))
    check_task_keys(tasks, data.get("tasks"), keys, report)
    return tasks


def _check_expect_tags(data: Mapping[str, object], report: Report) -> dict[str, Expect]:
    """`[expect.TAG]` tables: expectations for every host with that tag (gpudash.checks)."""
    if "expect" not in data:
        return {}
    raw = data["expect"]
    if not isinstance(raw, dict):
        report(("expect",), f"expected a table of [expect.TAG] tables, got {toml_type(raw)}")
        return {}
    from gpudash.config.expect import expect_problems  # only for a config with [expect]

    by_tag: dict[str, Expect] = {}
    for tag, table in raw.items():
        expect, problems = expect_problems(table)
        for at, message in problems:
            report(("expect", tag, *at), message)
        if expect is not None and not problems:
            by_tag[tag] = expect
    return by_tag


def _expect_merged(host: _Host, by_tag: Mapping[str, Expect]) -> dict[str, object]:
    """The host's fields with `expect` merged key by key: defaults, its tags', its own."""
    fields = host.fields
    if by_tag or "expect" in fields:
        from gpudash.config.expect import for_host  # loaded already: the key was checked

        tags = tuple(cast("Iterable[str]", fields.get("tags", ())))  # checked: a list of names
        own, default = host.own.get("expect"), host.defaults.get("expect")
        fields["expect"] = for_host(default, by_tag, tags, own)  # type: ignore[arg-type]
    return fields


def _expanded(
    name: str,
    own: dict[str, object],
    defaults: dict[str, object],
    path: KeyPath,
    report: Report,
) -> list[_Host]:
    """One host, or the hosts a `name-[01-16]` range names (gpudash.config.ranges)."""
    names = expand(name)
    if names is None:
        return [_Host(name, own, defaults)]
    if isinstance(names, str):
        report(path, names)
        return []
    address = own.get("address")
    addresses = expand(address) if isinstance(address, str) else None
    if isinstance(addresses, str):
        report((*path, "address"), addresses)
        return []
    if addresses is not None and len(addresses) != len(names):
        report(
            (*path, "address"),
            f"its range gives {len(addresses)} addresses for {len(names)} hosts",
        )
        return []
    return [
        _Host(one, {**own, "address": addresses[i]} if addresses else dict(own), defaults)
        for i, one in enumerate(names)
    ]


def _check_plain_table(
    data: Mapping[str, object], name: str, keys: Mapping[str, Key], report: Report
) -> dict[str, object]:
    """A top-level table of plain keys (`[ui]`, `[keys]`); absent means all defaults."""
    raw = data.get(name, {})
    if not isinstance(raw, dict):
        report((name,), f"expected a table, got {toml_type(raw)}")
        return {}
    return check_table(raw, keys, (name,), report)


def _check_name(name: str, path: KeyPath, folded: dict[str, str], report: Report) -> bool:
    """Names are labels (the CLI selects hosts by them), so only emptiness and control
    characters are wrong, plus two names that differ only by case, which read as one host."""
    if not name:
        report(path, "empty host name")
        return False
    if has_control(name):
        report(path, "host name contains a control character")
        return False
    other = folded.setdefault(name.casefold(), name)
    if other != name:
        report(path, f"duplicate host: same name as {render_path(('hosts', other))} but for case")
        return False
    return True


def _check_host(host: _Host, report: Report) -> None:
    fields = host.fields
    transport = fields.get("transport", "ssh")
    if transport == "replay" and "replay_dir" not in fields:
        where = " (from [defaults])" if "transport" not in host.own else ""
        report(
            host.origin("transport") if where == "" else ("hosts", host.name),
            f'transport "replay"{where} needs replay_dir, a directory written by'
            " `gpudash probe --save`",
        )
    if transport == "ssh" and "address" not in fields and any(c.isspace() for c in host.name):
        report(
            ("hosts", host.name), "the name has a space, so it cannot be the address: set address"
        )
    if transport == "ssh" and fields.get("jump") == host.name:
        if "jump" in host.own:
            report(host.origin("jump"), "jumps through this host itself")
        else:  # the bastion named in [defaults] connects directly
            host.own["jump"] = None


def _check_jumps(hosts: list[_Host], report: Report) -> None:
    """A jump that names a configured host must reach an ssh host, and must not loop."""
    by_name = {host.name: host for host in hosts}
    for host in hosts:
        target = host.fields.get("jump")
        if host.fields.get("transport", "ssh") != "ssh" or not isinstance(target, str):
            continue
        via = by_name.get(target)
        if via is None or via is host:
            continue
        via_transport = via.fields.get("transport", "ssh")
        if via_transport != "ssh":
            report(
                host.origin("jump"),
                f"jump host {show(target)} has transport {show(via_transport)};"
                " a jump host must use ssh",
            )
            continue
        chain = [host.name]
        while isinstance(target, str) and target in by_name and target not in chain:
            chain.append(target)
            target = by_name[target].fields.get("jump")
        if target == host.name:
            loop = " -> ".join(show(name) for name in [*chain, host.name])
            report(host.origin("jump"), f"jump cycle: {loop}")
