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
problem` through the config loader; shapes (HF repo ids, package specs, CUDA tags, paths) are
checked here, at load time, never on the host.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from gpudash.config_lines import KeyPath, render_path
from gpudash.config_schema import Invalid, Report, array, show, suggest, text, toml_type
from gpudash.tasks.kinds import KINDS, TORCH_CUDA_TAGS, Kind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from gpudash.config import HostConfig

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_PARAM = re.compile(r"^[a-z][a-z0-9_]*$")
_ENV_VAR = re.compile(r"^[A-Z_][A-Z0-9_]*$")
HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_REQUIREMENT = re.compile(
    r"""^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)
    (?:\[(?P<extras>[A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*)\])?
    \s*(?P<specs>(?:(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+\s*,?\s*)*)$""",
    re.VERBOSE,
)
_CUDA = re.compile(r"^cu\d{3}$")
_PYTHON = re.compile(r"^(?:3\.\d{1,2}(?:\.\d{1,2})?)?$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_VERSION = re.compile(r"^(?:(?:===|==|~=|>=|<=|!=|<|>)?[0-9][A-Za-z0-9.*+!_-]*)?$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h)?$")
_KEY = re.compile(r"^(?:[!-~]|(?:ctrl\+|shift\+|alt\+)*[a-z0-9_]+)$")


# --- parameter types ---------------------------------------------------------------------------


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise Invalid(f"expected a string, got {toml_type(value)}")
    if "\n" in value or "\x00" in value:
        raise Invalid("must be one line")
    return value


def host_path(value: object) -> str:
    """A path on the host: absolute, or `~/...` (expanded there). "" means unset."""
    checked = _string(value)
    if checked and not (checked.startswith("/") or checked == "~" or checked.startswith("~/")):
        raise Invalid(f"expected an absolute path or one starting with ~/, got {show(checked)}")
    return checked


def directory(value: object) -> str:
    """A directory below / or ~ (never "", / or ~ itself, no `..`), without a trailing /."""
    checked = host_path(value)
    if not checked.strip("/~") or ".." in checked.split("/"):
        raise Invalid(f"expected a directory below / or ~ (no ..), got {show(checked)}")
    return checked.rstrip("/")


def host_name(value: object) -> str:
    """The name of a configured host ("" = not set yet); the config checks that it is one
    (`gpudash.tasks.copy_params.check_hosts`), as only it knows the hosts."""
    return _string(value)


def hf_repo(value: object) -> str:
    checked = text(value)
    if not HF_REPO.match(checked) or ".." in checked:
        raise Invalid(f"expected a Hugging Face repo id like org/name, got {show(checked)}")
    return checked


def requirement(value: object) -> str:
    """A package spec: name, optional [extras], optional version specifiers; no URLs."""
    checked = text(value).strip()
    if not _REQUIREMENT.match(checked):
        raise Invalid(f"expected a package spec like torch or vllm==0.11.0, got {show(checked)}")
    return checked


def packages(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise Invalid(f"expected a non-empty array of package specs, got {toml_type(value)}")
    out = []
    for index, item in enumerate(value):
        try:
            out.append(requirement(item))
        except Invalid as exc:
            raise Invalid(exc.message, (index,)) from None
    return tuple(out)


def cuda(value: object) -> str:
    checked = text(value)
    if checked in ("auto", "cpu"):
        return checked
    if not _CUDA.match(checked):
        known = ", ".join(TORCH_CUDA_TAGS)
        raise Invalid(f'expected "auto", "cpu" or a CUDA tag cuNNN ({known}), got {show(checked)}')
    return checked


def python_version(value: object) -> str:
    checked = _string(value)
    if not _PYTHON.match(checked):
        raise Invalid(f'expected a Python version like "3.12", or "", got {show(checked)}')
    return checked


def engine(value: object) -> str:
    checked = text(value)
    if checked not in ("sglang", "vllm"):
        raise Invalid(f'expected "sglang" or "vllm", got {show(checked)}')
    return checked


def version(value: object) -> str:
    checked = _string(value).strip()
    if not _VERSION.match(checked):
        raise Invalid(f'expected a version like "0.5.2" or ">=0.5", got {show(checked)}')
    return checked


def module(value: object) -> str:
    checked = text(value)
    if not _MODULE.match(checked):
        raise Invalid(f"expected a Python import name like sglang, got {show(checked)}")
    return checked


def url(value: object) -> str:
    checked = _string(value)
    if checked and (
        not checked.startswith(("http://", "https://", "file://"))
        or any(c.isspace() for c in checked)
    ):
        raise Invalid(f"expected an http(s):// URL, got {show(checked)}")
    return checked


def local_files(value: object) -> tuple[str, ...]:
    """Files on this machine (patches): each must exist now, so a typo fails at load."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise Invalid(f"expected an array of file paths, got {toml_type(value)}")
    out = []
    for index, item in enumerate(items):
        path = os.path.expanduser(text(item))
        if not os.path.isfile(path):
            raise Invalid(f"no such file: {show(path)}", (index,))
        out.append(path)
    return tuple(out)


patterns = array(text)
"""Name patterns (`gpu-*`): an array of strings."""


def boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {toml_type(value)}")
    return value


PARAM_TYPES: Mapping[str, Callable[[object], object]] = {
    "str": _string,
    "path": host_path,
    "dir": directory,
    "host": host_name,
    "hf_repo": hf_repo,
    "packages": packages,
    "cuda": cuda,
    "python": python_version,
    "engine": engine,
    "version": version,
    "module": module,
    "url": url,
    "local_files": local_files,
    "patterns": patterns,
    "bool": boolean,
}


# --- spec keys -----------------------------------------------------------------------------------


def duration(value: object) -> float:
    """Seconds: a number, or "90s", "45m", "2h"."""
    if isinstance(value, bool):
        raise Invalid('expected seconds or a duration like "45m", got a boolean')
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value.strip())):
        seconds = float(match[1]) * {"s": 1, "m": 60, "h": 3600}[match[2] or "s"]
    else:
        raise Invalid(f'expected seconds or a duration like "45m", got {show(value)}')
    if not 0 < seconds < 7 * 24 * 3600:
        raise Invalid(f"must be between 0 and 7 days, got {show(value)}")
    return seconds


def _names(check: Callable[[object], str]) -> Callable[[object], tuple[str, ...]]:
    def array(value: object) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise Invalid(f"expected an array of strings, got {toml_type(value)}")
        out = []
        for index, item in enumerate(value):
            try:
                out.append(check(item))
            except Invalid as exc:
                raise Invalid(exc.message, (index,)) from None
        return tuple(out)

    return array


def task_name(value: object) -> str:
    checked = text(value)
    if not _NAME.match(checked):
        raise Invalid(f"expected a task name of a-z, 0-9, - and _, got {show(checked)}")
    return checked


def env_var(value: object) -> str:
    checked = text(value)
    if not _ENV_VAR.match(checked):
        raise Invalid(f"expected an environment variable name like HF_TOKEN, got {show(checked)}")
    if checked.startswith("GPUDASH_"):
        raise Invalid(f"{show(checked)}: GPUDASH_* names are reserved for task parameters")
    return checked


def key_name(value: object) -> str:
    checked = text(value)
    if not _KEY.match(checked):
        raise Invalid(f'expected a key like "t" or "ctrl+t", got {show(checked)}')
    return checked


def shell(value: object) -> str:
    """Shell text the user wrote and trusts (a check, a script body): any text but NUL."""
    if not isinstance(value, str):
        raise Invalid(f"expected a string, got {toml_type(value)}")
    if "\x00" in value:
        raise Invalid("contains a NUL byte")
    return value


def env_table(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise Invalid(f'expected a table of NAME = "value", got {toml_type(value)}')
    out = {}
    for name, item in value.items():
        try:
            env_var(name)
            out[name] = _string(item)
        except Invalid as exc:
            raise Invalid(exc.message, (name,)) from None
    return out


_KEYS: Mapping[str, Callable[[object], object]] = {
    "title": text,
    "key": key_name,
    "kind": text,
    "needs": _names(task_name),
    "hosts": _names(text),
    "tags": _names(text),
    "params": lambda v: v,  # checked against the kind below
    "check": shell,
    "timeout": duration,
    "confirm": boolean,
    "sudo": boolean,
    "env": env_table,
    "secrets": _names(env_var),
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
    params: Mapping[str, Any] = field(default_factory=dict)
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


def builtin_tables() -> dict[str, dict[str, Any]]:
    data = resources.files("gpudash.tasks").joinpath("builtin.toml").read_text()
    return tomllib.loads(data)["tasks"]


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
    base: Mapping[str, Mapping[str, Any]] | None = None,
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
    if not _NAME.match(name):
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
                values[name] = _string(value)
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
