"""The task kinds, one module each (as probe sections are, `gpudash.probe.sections`).

A kind module exports `KIND`, a `gpudash.tasks.kinds.base.Kind`: its parameters, its shell
body and check, and the hooks through which it differs from the others. Adding a kind is its
module, its name below, a `[tasks.NAME]` entry in `gpudash/tasks/builtin.toml` if it is built
in, and its test; `tests/unit/test_kinds.py` checks every kind registered here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING

from gpudash.tasks.kinds.base import Draft, HostGroup, Kind, Param, RunContext
from gpudash.tasks.kinds.torch import TORCH_CUDA_TAGS

if TYPE_CHECKING:
    from gpudash.tasks.spec import TaskSpec

KIND_NAMES = (
    "uv",
    "venv",
    "pip",
    "torch",
    "serving",
    "patch",
    "model",
    "copy",
    "verify",
    "serve",
    "script",
)
"""In the order `gpudash tasks` and the docs list them."""


def _load() -> dict[str, Kind]:
    kinds = {}
    for name in KIND_NAMES:
        kind = import_module(f"gpudash.tasks.kinds.{name}").KIND
        assert kind.name == name, f"gpudash.tasks.kinds.{name} exports the kind {kind.name!r}"
        kinds[name] = kind
    return kinds


KINDS: Mapping[str, Kind] = _load()


def run_groups(
    specs: Mapping[str, TaskSpec], names: Sequence[str], hosts: Sequence[str]
) -> dict[str, HostGroup]:
    """For each task of a run whose kind runs its hosts together, that group."""
    groups: dict[str, HostGroup] = {}
    for name in names:
        spec = specs.get(name)
        together = spec.kind_def.together if spec is not None else None
        group = together(spec, hosts) if together is not None and spec is not None else None
        if group is not None:
            groups[name] = group
    return groups


__all__ = [
    "KINDS",
    "KIND_NAMES",
    "TORCH_CUDA_TAGS",
    "Draft",
    "HostGroup",
    "Kind",
    "Param",
    "RunContext",
    "run_groups",
]
