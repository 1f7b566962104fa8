"""No `Any` crosses a boundary between gpudash's packages: a public function, method or field
whose signature says `Any` and that another package uses leaves that package's use of it
unchecked (issue 30: section data was `Any` from the probe to every panel, and mypy then
checked nothing the panels read). Inside a package, or for `**kw` passed through, `Any` is
the package's own business."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import gpudash

ROOT = Path(gpudash.__file__).parent

ALLOWED = {
    # Arguments asyncssh itself types as Any (its options object, the config-or-hosts of
    # the pool), held and handed back to asyncssh, never read by the other package.
    ("gpudash.transport.ssh", "SshPool"),
}


def _modules() -> dict[str, str]:
    out = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path.read_text(encoding="utf-8")
    return out


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _signature(node: ast.AST) -> str:
    if isinstance(node, ast.AnnAssign):
        return ast.unparse(node.annotation)
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    a = node.args
    named = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    return " ".join(ast.unparse(x.annotation) for x in named if x.annotation) + (
        f" -> {ast.unparse(node.returns)}" if node.returns else ""
    )


def _public_with_any(source: str) -> list[tuple[str, str]]:
    """(name, signature) of the module's public functions and public classes' public
    methods and fields whose annotations say `Any`."""
    found = []
    for node in ast.parse(source).body:
        members: list[tuple[str, ast.AST]] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign)):
                    inner = item.name if not isinstance(item, ast.AnnAssign) else ""
                    if not inner.startswith("_") or inner == "__init__":
                        members.append((node.name, item))
        for name, member in members:
            if not name.startswith("_") and re.search(r"\bAny\b", _signature(member)):
                found.append((name, _signature(member)))
    return found


def test_no_any_in_a_signature_another_package_uses() -> None:
    modules = _modules()
    leaks = []
    for module, source in modules.items():
        for name, signature in _public_with_any(source):
            if (module, name) in ALLOWED:
                continue
            short = module.rsplit(".", 1)[-1]
            imported = rf"from {re.escape(module)} import[^\n]*\b{name}\b"
            use = re.compile(rf"{imported}|\b{short}\.{name}\b")
            users = [
                m
                for m, text in modules.items()
                if _package(m) != _package(module) and use.search(text)
            ]
            if users:
                leaks.append(f"{module}.{name} ({signature}) used by {', '.join(users[:3])}")
    assert not leaks, "\n".join(leaks)


def test_the_guard_sees_a_leak() -> None:
    """The scan itself: a public function typed `Any` is found, a private one is not."""
    source = "def shown(x: Any) -> int: ...\ndef _own(x: Any) -> int: ...\n"
    assert _public_with_any(source) == [("shown", "Any -> int")]
