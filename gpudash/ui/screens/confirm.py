"""The confirmation before a task runs: exactly the scripts each host will get, secrets masked.

The text comes from the core's `prepare` (the same function the runner uses, with the same
probe facts), so what is shown is what is sent; secrets appear only as masked export lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
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

    BINDINGS: ClassVar[list[BindingType]] = [
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


class ConfirmCancel(ModalScreen[bool]):
    """Stop a run or not, asked before anything is sent (like k9s before a kill): y, or the
    cancel key a second time, stops it; n or escape keeps it running. `keys` are the keys
    that asked (the tasks screen's cancel keys, as `[keys]` set them), so a double press
    stops it whatever the key is."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Stop it", tooltip="Stop the run on its host"),
        Binding("n,escape", "answer(False)", "Keep it", tooltip="Leave the run running"),
    ]
    DEFAULT_CSS = """
    ConfirmCancel { align: center middle; }
    ConfirmCancel > Vertical {
        width: 72; max-width: 100%; height: auto;
        border: round $error; border-title-color: $text; background: $surface;
        padding: 0 1;
    }
    ConfirmCancel #cancel-what { height: auto; }
    ConfirmCancel Horizontal { height: auto; align: right middle; margin-top: 1; }
    ConfirmCancel Button { margin: 0 1; min-width: 14; }
    """

    def __init__(self, host: str, task: str, keys: Sequence[str] = ("x",)) -> None:
        super().__init__()
        self._run_host = host
        self._run_task = task
        self._keys = tuple(k for k in keys if k not in ("y", "n", "escape"))
        for key in self._keys:
            self._bindings.bind(key, "answer(True)", "Stop it", show=False)

    def compose(self) -> ComposeResult:
        again = self._keys[0] if self._keys else "y"
        with Vertical() as box:
            box.border_title = "Stop this run?"
            box.border_subtitle = f"y or {again} again: stop · n / esc: keep"
            what = Text("Stop task ")
            what.append(self._run_task, style="bold")
            what.append(" on ")
            what.append(self._run_host, style="bold")
            what.append("? Its processes get TERM, then KILL; what it did so far stays.")
            yield Static(what, id="cancel-what")
            with Horizontal():
                yield Button(f"Stop (y/{again})", variant="error", id="cancel-yes", compact=True)
                yield Button("Keep (n)", id="cancel-no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#cancel-no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "cancel-yes")
