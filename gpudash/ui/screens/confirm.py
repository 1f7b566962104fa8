"""The confirmation before a task runs: exactly the scripts each host will get, secrets masked.

The text comes from the core's `prepare` (the same function the runner uses, with the same
probe facts), so what is shown is what is sent; secrets appear only as masked export lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from gpudash.tasks.prepare import Facts, PrepareError, prepare
from gpudash.tasks.spec import TaskSpec


def plan_text(
    specs: Mapping[str, TaskSpec], chain: Sequence[str], hosts: Sequence[tuple[str, Facts | None]]
) -> Text:
    """Per host, per task of the chain (needs first): notes, the check, the script shown."""
    out = Text()
    for host, facts in hosts:
        for name in chain:
            spec = specs[name]
            out.append(f"# ---- {host}: {name} ", style="bold")
            out.append(f"({spec.title})\n", style="dim")
            try:
                prepared = prepare(spec, facts)
            except PrepareError as exc:
                out.append(f"# cannot run yet: {exc}\n", style="yellow")
                continue
            for note in prepared.notes:
                out.append(f"# note: {note}\n", style="cyan")
            if prepared.check and spec.check:
                out.append(f"# skipped when this exits 0: {spec.check.strip()}\n", style="dim")
            out.append(prepared.shown)
            out.append("\n")
    return out


class ConfirmTask(ModalScreen[bool]):
    """Run it (y / enter) or not (n / escape); dismisses with the answer."""

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("y", "answer(True)", "Run", tooltip="Run the task as shown", id="confirm-run"),
        Binding("n,escape", "answer(False)", "Cancel", tooltip="Run nothing", id="confirm-cancel"),
    ]
    DEFAULT_CSS = """
    ConfirmTask { align: center middle; }
    ConfirmTask > Vertical {
        width: 96; max-width: 100%; height: 90%;
        border: round $warning; border-title-color: $text; background: $surface;
    }
    ConfirmTask #confirm-script { height: 1fr; padding: 0 1; }
    ConfirmTask #confirm-what { padding: 0 1; height: auto; }
    ConfirmTask Horizontal { height: auto; align: right middle; }
    ConfirmTask Button { margin: 0 1; min-width: 12; }
    """

    def __init__(self, what: Text, script: Text) -> None:
        super().__init__()
        self._what = what
        self._script = script

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Run this?"
            box.border_subtitle = "y run · n cancel"
            yield Static(self._what, id="confirm-what")
            with VerticalScroll(id="confirm-script"):
                yield Static(self._script, markup=False)
            with Horizontal():
                yield Button("Run (y)", variant="warning", id="confirm-yes", compact=True)
                yield Button("Cancel (n)", id="confirm-no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")
