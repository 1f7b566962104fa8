"""The `[expect]` tables' parser: what a host should be, checked at load time.

The check that compares them with a probed host is `gpudash.checks.expect`.

    [defaults]
    expect = { driver = ">=580", hf_token = true }          every host
    [expect.b300]                                            every host tagged "b300"
    gpus = 8
    gpu_name = "*B300*"
    [hosts.b1]
    expect = { min_free_gb = { "/root/models" = 600 } }     this host

Tables merge key by key in that order (defaults, then each of the host's tags in the order of
its `tags`, then the host's own), so a host table only says what differs. Keys:

    gpus         int        number of GPUs
    gpu_name     glob       every GPU's name ("NVIDIA " prefix optional), case-insensitive
    min_cc       "10.0"     every GPU's compute capability at least this
    nvlink       "all" | "none" | "any"   GPU pairs on NVLink
    min_nvlink   int        every GPU pair has at least NV<n>
    driver, cuda, nvcc, python, torch    version specs: ">=580", "13.0", "2.11.*", ">=12.8,<13"
                 (cuda: the driver's CUDA; nvcc: the nvcc first on PATH; python, torch: some
                 venv has one that matches)
    min_free_gb  { PATH = GB }          free space where PATH lives (a probed dir or a mount)
    models       ["org/name", { repo = "org/name", gated = true, size_gb = 600, dir = "..." }]
                 present and complete on the host; `gated` (the config says so: gpudash never
                 asks Hugging Face) makes a missing HF token a failure; `size_gb` lets the disk
                 check say whether a missing model fits
    reachable    ["huggingface.co", ...]  hosts whose network target answered
    hf_token     bool       an HF token is (true) or is not (false) on the host
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from gpudash.config.lines import KeyPath
from gpudash.config.values import (
    Check,
    Invalid,
    array,
    boolean,
    choice,
    hf_repo,
    integer,
    show,
    suggest,
    text,
    toml_type,
)
from gpudash.versions import Spec

NVLINK_CHOICES = ("all", "none", "any")


@dataclass(frozen=True)
class ExpectedModel:
    repo: str
    gated: bool = False
    size_gb: float | None = None
    dir: str | None = None


@dataclass(frozen=True)
class Expect:
    """Checked expectations; None means "not expected" (nothing to check)."""

    gpus: int | None = None
    gpu_name: str | None = None
    min_cc: str | None = None
    nvlink: str | None = None
    min_nvlink: int | None = None
    driver: Spec | None = None
    cuda: Spec | None = None
    nvcc: Spec | None = None
    python: Spec | None = None
    torch: Spec | None = None
    min_free_gb: tuple[tuple[str, float], ...] | None = None
    models: tuple[ExpectedModel, ...] | None = None
    reachable: tuple[str, ...] | None = None
    hf_token: bool | None = None

    def merged(self, over: Expect | None) -> Expect:
        """These expectations with every key `over` sets replaced by its value."""
        if over is None:
            return self
        changes = {f.name: getattr(over, f.name) for f in fields(over)}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    def to_json(self) -> dict[str, object]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, Spec):
                value = value.text
            elif f.name == "min_free_gb":
                value = dict(value)
            elif f.name == "models":
                value = [m.__dict__ for m in value]
            out[f.name] = value
        return out


# --- parsing (called by the config loader) ---------------------------------------------------


def _cc(value: object) -> str:
    if isinstance(value, float):
        value = f"{value:.1f}"
    if not isinstance(value, str) or not re.fullmatch(r"\d{1,2}\.\d", value.strip()):
        got = show(value) if isinstance(value, str) else toml_type(value)
        raise Invalid(f'expected a version like "10.0", got {got}')
    return value.strip()


def _spec(example: str) -> Check:
    def check(value: object) -> Spec:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str):
            spec = Spec.parse(value)
            if spec is not None:
                return spec
        got = show(value) if isinstance(value, str) else toml_type(value)
        raise Invalid(f'expected a version like "{example}" or ">={example}", got {got}')

    return check


def _glob(value: object) -> str:
    return text(value)


def _gb(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        got = show(value) if isinstance(value, (int, float)) else toml_type(value)
        raise Invalid(f"expected a number of GB above 0, got {got}")
    return float(value)


def _free(value: object) -> tuple[tuple[str, float], ...]:
    if not isinstance(value, dict):
        raise Invalid(f'expected a table like {{ "/root/models" = 600 }}, got {toml_type(value)}')
    out = []
    for path, gb in value.items():
        if not (path.startswith("/") or path == "~" or path.startswith("~/")):
            raise Invalid(f"expected an absolute path on the host, got {show(path)}", (path,))
        try:
            out.append((path, _gb(gb)))
        except Invalid as exc:
            raise Invalid(exc.message, (path,)) from None
    return tuple(out)


_MODEL_KEYS = ("repo", "gated", "size_gb", "dir")


def _model(value: object) -> ExpectedModel:
    if isinstance(value, str):
        return ExpectedModel(hf_repo(value))
    if not isinstance(value, dict):
        got = toml_type(value)
        raise Invalid(f'expected "org/name" or {{ repo = "org/name", ... }}, got {got}')
    for key in value:
        if key not in _MODEL_KEYS:
            raise Invalid("unknown key" + suggest(key, _MODEL_KEYS), (key,))
    if "repo" not in value:
        raise Invalid("missing key 'repo'")
    checks = {"repo": hf_repo, "gated": boolean, "size_gb": _gb, "dir": text}
    fields_: dict[str, Any] = {}
    for key, raw in value.items():
        try:
            fields_[key] = checks[key](raw)
        except Invalid as exc:
            raise Invalid(exc.message, (key, *exc.at)) from None
    return ExpectedModel(**fields_)


def _host(value: object) -> str:
    checked = text(value)
    host = re.sub(r"^[a-z]+://", "", checked).split("/", 1)[0]
    if not host or any(c.isspace() for c in host):
        raise Invalid(f"expected a host name like huggingface.co, got {show(checked)}")
    return host.lower()


KEYS: Mapping[str, Check] = {
    "gpus": integer(0),
    "gpu_name": _glob,
    "min_cc": _cc,
    "nvlink": choice(*NVLINK_CHOICES),
    "min_nvlink": integer(1),
    "driver": _spec("580"),
    "cuda": _spec("13.0"),
    "nvcc": _spec("13.0"),
    "python": _spec("3.12"),
    "torch": _spec("2.11"),
    "min_free_gb": _free,
    "models": array(_model, what="repo ids or model tables"),
    "reachable": array(_host, what="host names"),
    "hf_token": boolean,
}


def expect_problems(value: object) -> tuple[Expect | None, list[tuple[KeyPath, str]]]:
    """Check one `expect` table: the expectations that passed and every problem, each at its
    key path inside the table."""
    if not isinstance(value, dict):
        return None, [((), f"expected a table like {{ gpus = 8 }}, got {toml_type(value)}")]
    found: dict[str, Any] = {}
    problems: list[tuple[KeyPath, str]] = []
    for key, raw in value.items():
        check = KEYS.get(key)
        if check is None:
            problems.append(((key,), "unknown expectation" + suggest(key, list(KEYS))))
            continue
        try:
            found[key] = check(raw)
        except Invalid as exc:
            problems.append(((key, *exc.at), exc.message))
    return Expect(**found), problems


def parse_expect(value: object) -> Expect:
    """The config schema's check for a host's `expect` key: the first problem is raised."""
    expect, problems = expect_problems(value)
    if problems:
        at, message = problems[0]
        raise Invalid(message, at)
    assert expect is not None
    return expect


def for_host(
    defaults: Expect | None, by_tag: Mapping[str, Expect], tags: tuple[str, ...], own: Expect | None
) -> Expect | None:
    """A host's expectations: defaults, then its tags' tables in order, then its own."""
    merged = defaults or Expect()
    for tag in tags:
        merged = merged.merged(by_tag.get(tag))
    merged = merged.merged(own)
    return None if merged.empty else merged
