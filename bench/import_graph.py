"""The import graph of gpudash/: which module imports which, and the loops among them.

    python -m bench.import_graph            summary, layer-by-layer counts, every loop
    python -m bench.import_graph --edges    and every edge, `a -> b  (function)` when the import
                                            sits inside a function
    python -m bench.import_graph --root DIR  the gpudash/ package under DIR (another commit's
                                            tree: `git archive 070fcbc gpudash | tar -x -C DIR`)

Read with `ast`, never by importing, so a loop shows even when a function-level import is what
holds it apart at run time. Counted: module-level imports and imports inside functions (both
run sooner or later); not counted: imports under `if TYPE_CHECKING:` (never run). `from pkg
import name` is an edge to `pkg.name` when that is a module of the package, else to `pkg`.
Importing `a.b.c` also runs the `__init__` of `a.b`; that implicit edge is NOT counted, so keep
package `__init__`s light (gpudash.checks' imports its families only inside `run_checks`).

tests/unit/test_import_graph.py uses `build_graph` and `cycles` from here to hold the layers.
"""

from __future__ import annotations

import argparse
import ast
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "gpudash"
PACKAGE = "gpudash"

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = ((),)


@dataclass(frozen=True)
class Edge:
    """One import: `source` imports `target` (both gpudash module names) at `line`."""

    source: str
    target: str
    line: int
    in_function: bool


def module_names(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name; a package is named by its `__init__`."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that can run, with whether it sits inside a function."""

    Found = Iterator[tuple[ast.Import | ast.ImportFrom, bool]]

    def walk(node: ast.AST, in_function: bool) -> Found:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:  # the `else:` of TYPE_CHECKING does run
                    yield from walk(other, in_function)
            else:
                inside = in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
                )
                yield from walk(child, inside)

    yield from walk(tree, False)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def build_graph(root: Path = ROOT, package: str = PACKAGE) -> list[Edge]:
    """Every import edge between two modules of the package, in file order."""
    names = module_names(root, package)
    edges: list[Edge] = []
    for module, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for node, in_function in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(module, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in names else base)
            for target in targets:
                if target in names and target != module:
                    edges.append(Edge(module, target, node.lineno, in_function))
    return edges


def adjacency(edges: list[Edge]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for edge in edges:
        out.setdefault(edge.source, set()).add(edge.target)
    return out


def components(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative): each is a
    set of modules that import each other round a loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return sorted(out)


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One shortest loop through each edge inside a component, deduplicated: `[a, b, a]`
    reads "a imports b imports a". Enough to name every loop's edges in a report."""
    found: set[tuple[str, ...]] = set()
    for group in components(graph):
        members = set(group)
        for source in group:
            for target in sorted(graph.get(source, set()) & members):
                path = _shortest(graph, target, source, members)
                if path is None:
                    continue
                loop = [source, *path]
                # rotate so the smallest name leads: the same loop found twice reads the same
                body = loop[:-1]
                first = body.index(min(body))
                body = body[first:] + body[:first]
                found.add((*body, body[0]))
    return [list(loop) for loop in sorted(found, key=lambda c: (len(c), c))]


def _shortest(
    graph: Mapping[str, set[str]], start: str, goal: str, members: set[str]
) -> list[str] | None:
    """Breadth-first path `start .. goal` inside `members`."""
    previous: dict[str, str | None] = {start: None}
    queue = [start]
    for node in queue:
        if node == goal:
            path = [node]
            while (back := previous[path[-1]]) is not None:
                path.append(back)
            return path[::-1]
        for child in sorted(graph.get(node, set()) & members):
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return None


def describe(loop: list[str], edges: list[Edge]) -> str:
    """`a -> b (function) -> a`: a loop, each hop marked when its import sits in a function."""
    hops = [loop[0]]
    for a, b in itertools.pairwise(loop):
        late = any(e.in_function for e in edges if e.source == a and e.target == b)
        hops.append(f"{b} (function)" if late else b)
    return " -> ".join(hops)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.import_graph", description=__doc__)
    parser.add_argument("--edges", action="store_true", help="print every edge too")
    parser.add_argument("--root", type=Path, help="read DIR/gpudash instead of this checkout's")
    args = parser.parse_args(argv)
    root = args.root / PACKAGE if args.root else ROOT
    names = module_names(root)
    edges = build_graph(root)
    graph = adjacency(edges)
    late = [e for e in edges if e.in_function]
    print(
        f"{len(names)} modules, {len({(e.source, e.target) for e in edges})} import edges "
        f"({len({(e.source, e.target) for e in late})} with an import inside a function)"
    )
    if args.edges:
        for edge in sorted(edges, key=lambda e: (e.source, e.target, e.line)):
            where = "  (function)" if edge.in_function else ""
            print(f"  {edge.source} -> {edge.target}  :{edge.line}{where}")
    groups = components(graph)
    loops = cycles(graph)
    print(f"{len(groups)} groups of modules importing each other round a loop")
    for group in groups:
        print("  " + ", ".join(group))
    print(f"{len(loops)} loops (the shortest through each edge of a group):")
    for loop in loops:
        print("  " + describe(loop, edges))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
