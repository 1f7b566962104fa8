"""The task kinds, one module each (as probe sections are, `gpudash.probe.sections`).

A kind module exports `KIND`, a `gpudash.tasks.kinds.base.Kind`: its parameters, its shell
body and check, and the hooks through which it differs from the others. Adding a kind is its
module, its name below, a `[tasks.NAME]` entry in `gpudash/tasks/builtin.toml` if it is built
in, and its test; `tests/unit/test_kinds.py` checks every kind registered here.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module

from gpudash.tasks.kinds.base import Draft, Kind, Param, RunContext
from gpudash.tasks.kinds.torch import TORCH_CUDA_TAGS

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

__all__ = ["KINDS", "KIND_NAMES", "TORCH_CUDA_TAGS", "Draft", "Kind", "Param", "RunContext"]
