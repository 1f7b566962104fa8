"""Checks for the values in a task table, one per shape: each takes the raw TOML value and
returns it checked (and normalised: a lone string becomes a one-item array, a directory loses
its trailing /), or raises `Invalid` with a message and the key path below the value.

Shapes (HF repo ids, package specs, CUDA tags, paths) are checked here, at load time, never on
the host. `PARAM_TYPES` names the checks a kind's parameters use (`Param.type` in
`gpudash.tasks.kinds`); `gpudash.tasks.spec` applies the rest to the spec's own keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from gpudash.config.values import (
    Check,
    Invalid,
    array,
    boolean,
    hf_repo,
    show,
    text,
    toml_type,
)
from gpudash.tasks.kinds import TORCH_CUDA_TAGS

TASK_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_ENV_VAR = re.compile(r"^[A-Z_][A-Z0-9_]*$")
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


def one_line(value: object) -> str:
    """Any string of one line (it becomes an `export` line on the host)."""
    if not isinstance(value, str):
        raise Invalid(f"expected a string, got {toml_type(value)}")
    if "\n" in value or "\x00" in value:
        raise Invalid("must be one line")
    return value


def host_path(value: object) -> str:
    """A path on the host: absolute, or `~/...` (expanded there). "" means unset."""
    checked = one_line(value)
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
    (`gpudash.tasks.copy.params.check_hosts`), as only it knows the hosts."""
    return one_line(value)


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
    checked = one_line(value)
    if not _PYTHON.match(checked):
        raise Invalid(f'expected a Python version like "3.12", or "", got {show(checked)}')
    return checked


def engine(value: object) -> str:
    checked = text(value)
    if checked not in ("sglang", "vllm"):
        raise Invalid(f'expected "sglang" or "vllm", got {show(checked)}')
    return checked


def version(value: object) -> str:
    checked = one_line(value).strip()
    if not _VERSION.match(checked):
        raise Invalid(f'expected a version like "0.5.2" or ">=0.5", got {show(checked)}')
    return checked


def module(value: object) -> str:
    checked = text(value)
    if not _MODULE.match(checked):
        raise Invalid(f"expected a Python import name like sglang, got {show(checked)}")
    return checked


def url(value: object) -> str:
    checked = one_line(value)
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


def integer(value: object) -> int:
    """A whole number (a TOML integer, not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"expected an integer, got {toml_type(value)}")
    return value


# --- serve's parameters (gpudash/tasks/kinds/serve.py) -------------------------------------


def serve_engine(value: object) -> str:
    checked = text(value)
    if checked not in ("sglang", "vllm", "transformers"):
        raise Invalid(f'expected "sglang", "vllm" or "transformers", got {show(checked)}')
    return checked


def port(value: object) -> int | str:
    """A TCP port, or "auto" (the first free one from 30000, chosen on the host)."""
    if value == "auto":
        return "auto"
    checked = integer(value)
    if not 1 <= checked <= 65535:
        raise Invalid(f'expected a port 1-65535 or "auto", got {show(value)}')
    return checked


def count_or_auto(value: object) -> int | str:
    """A count of at least 1, or "auto" (from the probe)."""
    if value == "auto":
        return "auto"
    checked = integer(value)
    if checked < 1:
        raise Invalid(f'expected a number >= 1 or "auto", got {show(value)}')
    return checked


def device(value: object) -> str:
    checked = text(value)
    if checked not in ("auto", "cuda", "cpu"):
        raise Invalid(f'expected "auto", "cuda" or "cpu", got {show(checked)}')
    return checked


def model_ref(value: object) -> str:
    """A model folder on the host (absolute or ~/...) or a Hugging Face repo id."""
    checked = text(value)
    if checked.startswith(("/", "~")):
        return directory(checked)
    return hf_repo(checked)


PARAM_TYPES: Mapping[str, Callable[[object], object]] = {
    "str": one_line,
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
    "int": integer,
    "serve_engine": serve_engine,
    "port": port,
    "count_or_auto": count_or_auto,
    "device": device,
    "model_ref": model_ref,
    "duration": lambda value: duration(value),  # defined below, with the spec keys
    "args": array(one_line, what="arguments"),
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


def name_list(check: Callable[[object], str]) -> Check:
    """An array checked item by item with `check` (an error names the element's index, and
    the path inside it); a lone string is an array of one."""
    return array(check, or_one=True)


def task_name(value: object) -> str:
    checked = text(value)
    if not TASK_NAME.match(checked):
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
            out[name] = one_line(item)
        except Invalid as exc:
            raise Invalid(exc.message, (name,)) from None
    return out
