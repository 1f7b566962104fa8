"""Task specs: the TOML tables (built-ins in `builtin.toml`, the user's `[tasks.NAME]`), checked.

    [tasks.torch]
    title   = "Install PyTorch for the driver's CUDA"
    key     = "t"                   # the app's key for it; unique
    kind    = "torch"               # uv venv pip torch serving patch model copy script
    needs   = ["venv"]              # tasks that must have succeeded on the host first
    hosts   = ["gpu-*"]             # name patterns, and/or
    tags    = ["h200"]              # host tags; default: every host
    params  = { venv = "~/venvs/serve", cuda = "auto" }   # typed per kind
    check   = "..."                 # exit 0 = already done (skipped); "" turns the kind's off
    timeout = "45m"                 # enforced on the host
    confirm = true                  # ask first
    sudo    = false                 # run with `sudo -n`: a password prompt is a clear failure
    env     = { UV_HTTP_TIMEOUT = "120" }
    secrets = ["HF_TOKEN"]          # names only: values come from gpudash's environment
    run     = "..."                 # the body, for kind = "script" only

A user table with the name of a built-in overrides it key by key (`params` merge too).
Every problem is reported as (key path, message), and becomes `FILE:LINE: tasks.NAME.key:
problem` through the config loader. Each value's shape is checked by `gpudash.tasks.values`,
at load time, never on the host; this module checks the tables as a whole (unknown keys,
a kind's parameters, `needs` that name no task or go round in a cycle, keys taken twice).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpudash.config.lines import KeyPath, render_path
from gpudash.config.values import Invalid, Report, show, suggest, text, toml_type
from gpudash.tasks.builtin import builtin_tables
from gpudash.tasks.kinds import KINDS, Kind
from gpudash.tasks.values import (
    PARAM_TYPES,
    TASK_NAME,
    boolean,
    duration,
    env_table,
    env_var,
    key_name,
    name_list,
    one_line,
    shell,
    task_name,
)

if TYPE_CHECKING:
    from gpudash.config.model import HostConfig

_PARAM = re.compile(r"^[a-z][a-z0-9_]*$")

# The keys of a task table, each with the check of its value.
_KEYS: Mapping[str, Callable[[object], object]] = {
    "title": text,
    "key": key_name,
    "kind": text,
    "needs": name_list(task_name),
    "hosts": name_list(text),
    "tags": name_list(text),
    "params": lambda v: v,  # checked against the kind below
    "check": shell,
    "timeout": duration,
    "confirm": boolean,
    "sudo": boolean,
    "env": env_table,
    "secrets": name_list(env_var),
    "run": shell,
}


@dataclass(frozen=True)
class TaskSpec:
    name: str
    title: str
    kind: str
    key: str | None = None
    needs: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    params: Mapping[str, object] = field(default_factory=dict)
    check: str | None = None
    timeout: float = 1800.0
    confirm: bool = False
    sudo: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    run: str | None = None
    builtin: bool = False

    @property
    def kind_def(self) -> Kind:
        return KINDS[self.kind]

    @property
    def affects(self) -> tuple[str, ...]:
        return self.kind_def.affects

    def applies_to(self, host: HostConfig) -> bool:
        """No selector: every host. Else a name pattern or a tag must match."""
        if not self.hosts and not self.tags:
            return True
        if any(fnmatch.fnmatchcase(host.name, pattern) for pattern in self.hosts):
            return True
        return bool(set(self.tags) & set(host.tags))


class TaskSpecError(ValueError):
    """Problems found in task tables outside a config file (the built-ins, a test)."""

    def __init__(self, problems: list[tuple[KeyPath, str]]) -> None:
        self.problems = problems
        lines = [f"{render_path(path)}: {message}" for path, message in problems]
        super().__init__("\n".join(lines))


def _merge(base: Mapping[str, Any] | None, own: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base or {})
    for key, value in own.items():
        mergeable = key in ("params", "env") and isinstance(merged.get(key), dict)
        if mergeable and isinstance(value, dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def check_tasks(
    raw: object,
    report: Report,
    *,
    base: Mapping[str, Mapping[str, object]] | None = None,
    path: KeyPath = ("tasks",),
) -> dict[str, TaskSpec]:
    """Check a `tasks` table (over the built-ins unless `base` is given); returns the specs."""
    tables = builtin_tables() if base is None else dict(base)
    builtin_names = set(tables)
    own_names: set[str] = set()
    if not isinstance(raw, dict):
        report(path, f"expected a table of [tasks.NAME] tables, got {toml_type(raw)}")
        raw = {}
    for name, table in raw.items():
        if not isinstance(table, dict):
            report((*path, name), f"expected a table, got {toml_type(table)}")
            continue
        own_names.add(name)
        tables[name] = _merge(tables.get(name), table)

    specs: dict[str, TaskSpec] = {}
    for name, table in tables.items():
        where: KeyPath = (*path, name) if name in own_names else ("builtin", name)
        spec = _check_one(name, table, where, report, builtin=name in builtin_names)
        if spec is not None:
            specs[name] = spec
    _check_graph(specs, set(tables), own_names, path, report)
    return specs


def _check_one(
    name: str, table: Mapping[str, Any], where: KeyPath, report: Report, *, builtin: bool
) -> TaskSpec | None:
    if not TASK_NAME.match(name):
        report(where, "a task name is a-z, 0-9, - and _ (it names a directory on the host)")
        return None
    fields: dict[str, Any] = {}
    ok = True
    for key, value in table.items():
        check = _KEYS.get(key)
        if check is None:
            report((*where, key), "unknown key" + suggest(key, list(_KEYS)))
            ok = False
            continue
        try:
            fields[key] = check(value)
        except Invalid as exc:
            report((*where, key, *exc.at), exc.message)
            ok = False
    kind_name = fields.get("kind")
    if kind_name is None:
        if "kind" not in table:
            report(where, "missing key 'kind'")
        return None
    kind = KINDS.get(kind_name)
    if kind is None:
        near = suggest(kind_name, list(KINDS), value=True)
        report((*where, "kind"), f"unknown kind {show(kind_name)}{near}")
        return None
    if "title" not in fields:
        if "title" not in table:
            report(where, "missing key 'title'")
        ok = False
    if kind.name == "script" and not fields.get("run"):
        if "run" not in table:
            report(where, 'kind "script" needs run, the script body')
        ok = False
    if kind.name != "script" and "run" in fields:
        says = f'only kind "script" takes run; kind {show(kind.name)} has its own body'
        report((*where, "run"), says)
        ok = False
    params = _check_params(kind, table.get("params", {}), (*where, "params"), report)
    if params is None or not ok:
        return None
    check = fields.get("check", kind.check)
    return TaskSpec(
        name=name,
        title=fields["title"],
        kind=kind.name,
        key=fields.get("key"),
        needs=fields.get("needs", ()),
        hosts=fields.get("hosts", ()),
        tags=fields.get("tags", ()),
        params=params,
        check=check or None,
        timeout=fields.get("timeout", kind.default_timeout),
        confirm=fields.get("confirm", False),
        sudo=fields.get("sudo", False),
        env=fields.get("env", {}),
        secrets=fields.get("secrets", ()),
        run=fields.get("run"),
        builtin=builtin,
    )


def _check_params(kind: Kind, raw: object, where: KeyPath, report: Report) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        report(where, f"expected a table, got {toml_type(raw)}")
        return None
    ok = True
    values: dict[str, Any] = {}
    failed: set[str] = set()
    for name, value in raw.items():
        param = kind.params.get(name)
        if kind.name == "script":  # free-form: strings only, each exported as GPUDASH_NAME
            if not _PARAM.match(name):
                report((*where, name), "a parameter name is a-z, 0-9 and _")
                ok = False
                continue
            try:
                values[name] = one_line(value)
            except Invalid as exc:
                report((*where, name), exc.message)
                ok = False
            continue
        if param is None:
            known = list(kind.params)
            listed = ", ".join(known) or "none"
            says = f"unknown parameter for kind {show(kind.name)} (takes: {listed})"
            report((*where, name), says + suggest(name, known))
            ok = False
            continue
        try:
            values[name] = PARAM_TYPES[param.type](value)
        except Invalid as exc:
            report((*where, name, *exc.at), exc.message)
            failed.add(name)
            ok = False
    for name, param in kind.params.items():
        if name in values or name in failed:
            continue
        if param.required:
            report(where, f"missing parameter {name!r} (kind {show(kind.name)})")
            ok = False
        elif param.default is not None and param.type != "local_files":
            values[name] = PARAM_TYPES[param.type](param.default)
        else:
            values[name] = param.default
    return values if ok else None


def _check_graph(
    specs: Mapping[str, TaskSpec], names: set[str], own: set[str], path: KeyPath, report: Report
) -> None:
    keys: dict[str, str] = {}
    for name, spec in specs.items():
        where = (*path, name) if name in own else ("builtin", name)
        for need in spec.needs:
            if need not in names:
                near = suggest(need, list(names), value=True)
                report((*where, "needs"), f"unknown task {show(need)}{near}")
        if spec.key is not None:
            other = keys.setdefault(spec.key, name)
            if other != name:
                report((*where, "key"), f"key {show(spec.key)} is already task {show(other)}'s")
    for name in specs:  # cycles
        seen: list[str] = []
        stack = [name]
        while stack:
            current = stack.pop()
            for need in specs[current].needs if current in specs else ():
                if need == name:
                    chain = " -> ".join([name, *seen, name]) if seen else f"{name} -> {name}"
                    where = (*path, name) if name in own else ("builtin", name)
                    report((*where, "needs"), f"needs cycle: {chain}")
                    stack = []
                    break
                if need not in seen:
                    seen.append(need)
                    stack.append(need)


def load_tasks(config_tasks: object = None) -> dict[str, TaskSpec]:
    """Built-ins merged with a raw `tasks` table; raises TaskSpecError listing every problem."""
    problems: list[tuple[KeyPath, str]] = []
    specs = check_tasks(config_tasks or {}, lambda p, m: problems.append((p, m)))
    if problems:
        raise TaskSpecError(problems)
    return specs


def order(specs: Mapping[str, TaskSpec], wanted: list[str]) -> list[str]:
    """`wanted` and everything they need, needs first (each once)."""
    out: list[str] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in out or name in trail:
            return
        for need in specs[name].needs:
            visit(need, (*trail, name))
        out.append(name)

    for name in wanted:
        visit(name, ())
    return out
