"""gpudash's layers, held: no import loop, no upward import, the few exceptions written down.

The graph is read from the source with `ast` (bench/import_graph.py, also run as
`python -m bench.import_graph`): imports at module level AND inside functions count, since a
function-level import is only a loop put off until the function runs; imports under
`if TYPE_CHECKING:` do not (they never run).

Layers, bottom first; a module may import its own layer and the ones below, never above:

    leaves      gpudash, text, files, aio, versions, units, shlib (the sh library of remote
                scripts), config.model: import nothing of gpudash
    probe       the probe script, its framing and the parsers: pure text -> dataclasses
    results     model (the probe's results), saved (raw outputs on disk), summary (their words)
    config      the config file: values, schema, expect, lines, keys, document, load
    checks      findings, one module per family
    transport   ssh, local, replay: how a script reaches a host
    orchestration  host_probe (one host) and fleet/headstart (many): probe through a transport
    tasks       bootstrap tasks; the fleet runner probes first (tasks.fleet_run -> host_probe)
    faces       report, cli, ui, __main__: what the user sees

The table follows the package's real graph: `model` imports `probe.parts`, so probe sits
below the results; `tasks.fleet_run` probes before it runs, so tasks sit above host_probe.
A new module whose name matches no layer fails the test until it is placed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from bench import import_graph
from bench.import_graph import Edge, adjacency, components, cycles, describe

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "leaves",
        (
            "gpudash",
            "gpudash.text",
            "gpudash.files",
            "gpudash.aio",
            "gpudash.versions",
            "gpudash.units",
            "gpudash.shlib",
            "gpudash.config.model",
            # A facts table the probe reads (device id / name -> cc); it imports nothing.
            "gpudash.gpu_identity",
        ),
    ),
    # Travels to the host and runs there on its own (issue 29): imports nothing but itself,
    # so any layer may read it (the serve probe section: the state file, phase titles).
    ("serve", ("gpudash.serve",)),
    ("probe", ("gpudash.probe",)),
    ("results", ("gpudash.model", "gpudash.saved", "gpudash.summary")),
    ("config", ("gpudash.config",)),
    ("checks", ("gpudash.checks",)),
    ("transport", ("gpudash.transport",)),
    ("orchestration", ("gpudash.host_probe", "gpudash.fleet", "gpudash.headstart")),
    ("serve-preflight", ("gpudash.serve.preflight",)),  # reads the probe's results, checks
    ("tasks", ("gpudash.tasks",)),
    (
        "faces",
        ("gpudash.report", "gpudash.cli", "gpudash.ui", "gpudash.__main__"),
    ),
)

LEAVES = (
    "gpudash.text",
    "gpudash.files",
    "gpudash.aio",
    "gpudash.units",
    "gpudash.versions",
    "gpudash.shlib",
    "gpudash.config.model",
    "gpudash.gpu_identity",
)
"""Modules anyone may import: they import nothing of gpudash (config.model only for types)."""

ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    # The single documented exception (issue 16): checking the config file's `[tasks]`
    # tables needs the task kinds and their parameter checks, which live with the tasks.
    # Imported inside `check_document`'s task step, so loading a config without tasks
    # never imports gpudash.tasks; nothing in gpudash.tasks imports config.document back.
    ("gpudash.config.document", "gpudash.tasks.spec"): "checks [tasks.NAME] tables",
    ("gpudash.config.document", "gpudash.tasks.builtin"): "the built-in task tables",
    ("gpudash.config.document", "gpudash.tasks.copy.params"): "a copy task's `from` host",
}
"""Upward imports allowed, each with why. One that no longer exists fails the test."""

ALLOWED_LOOP_EDGES: dict[tuple[str, str], str] = {}
"""Edges allowed to close an import loop, each with why (none today: the config -> tasks
exception above does not loop back). One that no longer closes a loop fails the test."""


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the longest prefix naming `module`; None when none does."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            named = module == prefix or (prefix != "gpudash" and module.startswith(prefix + "."))
            if named and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def _upward(edges: list[Edge]) -> dict[tuple[str, str], Edge]:
    out: dict[tuple[str, str], Edge] = {}
    for edge in edges:
        low, high = layer_of(edge.source), layer_of(edge.target)
        if low is not None and high is not None and high > low:
            out.setdefault((edge.source, edge.target), edge)
    return out


@cache
def build_graph() -> list[Edge]:
    """gpudash's graph, read once for the whole file."""
    return import_graph.build_graph()


def _where(edge: Edge) -> str:
    late = " (inside a function)" if edge.in_function else ""
    return f"{edge.source} -> {edge.target} at line {edge.line}{late}"


# --- the package ---------------------------------------------------------------------------


def test_every_module_of_gpudash_has_a_layer():
    from bench.import_graph import module_names

    unplaced = [name for name in module_names() if layer_of(name) is None]
    assert unplaced == [], "place these modules in a layer of LAYERS: " + ", ".join(unplaced)


def test_no_import_loop_inside_gpudash():
    edges = build_graph()
    graph = adjacency([e for e in edges if (e.source, e.target) not in ALLOWED_LOOP_EDGES])
    loops = [describe(loop, edges) for loop in cycles(graph)]
    assert loops == [], "import loops:\n  " + "\n  ".join(loops)


def test_no_module_imports_a_layer_above_its_own():
    wrong = [
        f"{_where(edge)}: {LAYERS[layer_of(edge.source) or 0][0]} imports "
        f"{LAYERS[layer_of(edge.target) or 0][0]}"
        for key, edge in _upward(build_graph()).items()
        if key not in ALLOWED_UPWARD
    ]
    assert wrong == [], "upward imports:\n  " + "\n  ".join(wrong)


def test_the_leaf_modules_import_nothing_of_gpudash():
    edges = [_where(e) for e in build_graph() if e.source in LEAVES]
    assert edges == []


def test_probe_imports_nothing_from_transport():
    """The parsers stay pure: the orchestration that talks to a transport is host_probe."""
    edges = [
        _where(e)
        for e in build_graph()
        if e.source.startswith("gpudash.probe") and e.target.startswith("gpudash.transport")
    ]
    assert edges == []


def test_every_allowed_exception_is_still_a_real_edge_that_needs_allowing():
    """A stale exception is noticed: the edge is gone, or it no longer goes up / loops."""
    edges = build_graph()
    upward = _upward(edges)
    stale = [f"{a} -> {b}: no longer upward" for a, b in ALLOWED_UPWARD if (a, b) not in upward]
    in_loops = {
        (a, b)
        for group in components(adjacency(edges))
        for a in group
        for b in group
        if any(e.source == a and e.target == b for e in edges)
    }
    stale += [
        f"{a} -> {b}: no longer in a loop" for a, b in ALLOWED_LOOP_EDGES if (a, b) not in in_loops
    ]
    assert stale == []


# --- the graph reader itself, on a small package written for it ---------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_the_reader_sees_function_level_and_relative_imports_but_not_type_checking_ones(
    tmp_path: Path,
):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "def f():\n    from pkg import b\n",
            "b.py": "from . import c\n",
            "c.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.a import f\n"
                "import pkg.a\n"
            ),
            "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n",
            "sub/__init__.py": "from ..d import x\n",
        },
    )
    edges = import_graph.build_graph(root, "pkg")
    assert {(e.source, e.target, e.in_function) for e in edges} == {
        ("pkg.a", "pkg.b", True),
        ("pkg.b", "pkg.c", False),
        ("pkg.c", "pkg.a", False),
        ("pkg.sub", "pkg.d", False),
    }
    assert cycles(adjacency(edges)) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_a_package_without_loops_has_none(tmp_path: Path):
    root = _package(tmp_path, {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": "x = 1\n"})
    edges = import_graph.build_graph(root, "pkg")
    assert [(e.source, e.target) for e in edges] == [("pkg.a", "pkg.b")]
    assert cycles(adjacency(edges)) == []
