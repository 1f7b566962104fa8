"""A task kind is registered once: its module brings its parameters, body, check and hooks,
and the pipeline never asks a kind's name (as `test_registry` holds for probe sections)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from gpudash.tasks.kinds import KIND_NAMES, KINDS
from gpudash.tasks.kinds.base import Kind
from gpudash.tasks.prepare import Facts, prepare
from gpudash.tasks.spec import load_tasks
from gpudash.tasks.values import PARAM_TYPES

ROOT = Path(__file__).resolve().parents[2] / "gpudash"


@pytest.mark.parametrize("name", KIND_NAMES)
def test_every_kind_is_its_own_module_with_checked_parameters(name: str) -> None:
    kind = KINDS[name]
    assert isinstance(kind, Kind) and kind.name == name
    assert (ROOT / "tasks" / "kinds" / f"{name}.py").is_file()
    for pname, param in kind.params.items():
        assert param.type in PARAM_TYPES, f"{name}.{pname}: unknown type {param.type}"
    assert kind.default_timeout > 0
    if kind.run is None and kind.prepare is None:
        assert kind.body.strip(), f"{name}: a job kind needs a body"
    assert not kind.needs_facts or kind.facts_sections, name


@pytest.mark.parametrize("name", list(load_tasks()))
def test_every_builtin_task_prepares_to_a_script_for_a_known_gpu_host(name: str) -> None:
    spec = load_tasks()[name]
    facts = Facts("12.8", ("9.0",), known=True, driver_version="570.86.15", gpus=1)
    prepared = prepare(spec, facts, environ={})
    assert prepared.script.strip()
    assert prepared.spec is spec


def _kind_name_tests(path: Path) -> list[str]:
    """Comparisons of a kind's name with a literal: `spec.kind == "copy"` and the like."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Attribute)
            and node.left.attr == "kind"
            and any(isinstance(c, (ast.Constant, ast.Tuple)) for c in node.comparators)
        ):
            found.append(f"{path.name}:{node.lineno}")
    return found


@pytest.mark.parametrize(
    "module", ["prepare.py", "fleet_run.py", "runner.py", "../ui/task_control.py"]
)
def test_the_task_pipeline_never_asks_a_kinds_name(module: str) -> None:
    assert _kind_name_tests(ROOT / "tasks" / module) == []


def test_kind_hooks_are_fields_not_names() -> None:
    hooks = {"prepare", "preview", "sites", "wants_facts", "run"}
    assert hooks <= {f.name for f in dataclasses.fields(Kind)}
