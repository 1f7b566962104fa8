"""Messages up, attributes down in gpudash/ui (issue 30, item 4): screens and panels post
dataclass messages that the app routes with `@on`, and get what they show when they are made;
none calls the app by name, under `type: ignore`, or through `getattr`. Checked over the
source: every `self.app.X` outside the app itself is Textual's own App API."""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App

UI = Path(__file__).resolve().parents[2] / "gpudash" / "ui"

OWN = {"app.py", "task_control.py", "task_host.py"}
"""The app, and the object it composes for tasks (typed by the `TaskHost` Protocol)."""


def app_uses() -> dict[str, set[str]]:
    """Each `self.app.NAME` and `getattr(self.app, ...)` outside `OWN`, by file."""
    found: dict[str, set[str]] = {}
    for path in UI.rglob("*.py"):
        if path.name in OWN:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = None
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                target = node.value
                name = node.attr
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr":
                target = node.args[0] if node.args else None
                name = "getattr()"
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "app"
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.setdefault(str(path.relative_to(UI)), set()).add(name)
    return found


def test_screens_and_panels_use_only_textuals_app_api() -> None:
    uses = app_uses()
    assert uses, "the scan found no self.app use at all: it is broken"
    textual = App()  # instance attributes too (`console`)
    foreign = {f: sorted(n for n in names if not hasattr(textual, n)) for f, names in uses.items()}
    assert {f: n for f, n in foreign.items() if n} == {}


def test_no_type_ignore_reaches_the_app() -> None:
    lines = [
        f"{path.relative_to(UI)}:{i}"
        for path in UI.rglob("*.py")
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "self.app" in line and "type: ignore" in line
    ]
    assert lines == []


def test_the_messages_are_dataclasses_nested_in_their_senders() -> None:
    from dataclasses import is_dataclass

    from gpudash.ui.panels.findings import FindingsPanel
    from gpudash.ui.screens.tasks import TasksScreen

    for message in (
        FindingsPanel.FixRequested,
        TasksScreen.TaskRequested,
        TasksScreen.CancelRequested,
    ):
        assert is_dataclass(message), message
        assert message.__qualname__.split(".")[0] in ("FindingsPanel", "TasksScreen")
