"""Which finding to fix, when the Findings panel has more than one a task fixes.

A list of the fixable findings, worst first, each with the task that fixes it; enter picks
one (the task's own confirmation follows), escape picks none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from gpudash.ui.render import remote


def choice(finding: Any) -> Text:
    """'uv  ← env.no_uv  uv is not installed': the task first, so the list reads as actions."""
    out = Text(str(finding.fix_task), style="bold")
    out.append("  ← ", style="dim")
    out.append(str(finding.code))
    out.append("  ")
    out.append(remote(finding.title, style="dim"))
    return out


class FixPicker(ModalScreen[int | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "pick_none", "Back", tooltip="Fix nothing"),
        Binding("j", "cursor('down')", show=False),
        Binding("k", "cursor('up')", show=False),
    ]
    DEFAULT_CSS = """
    FixPicker { align: center middle; }
    FixPicker > Vertical {
        width: 90; max-width: 100%; height: auto; max-height: 80%;
        border: round $accent; border-title-color: $text; background: $surface;
    }
    FixPicker OptionList { height: auto; max-height: 100%; border: none; }
    """

    def __init__(self, choices: Sequence[tuple[int, Any]]) -> None:
        super().__init__()
        self._choices = list(choices)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Fix which finding?"
            box.border_subtitle = "enter: run its task (asks first) · esc: back"
            yield OptionList(
                *(Option(choice(f), id=str(i)) for i, f in self._choices), id="fix-choices"
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def action_cursor(self, where: str) -> None:
        options = self.query_one(OptionList)
        options.action_cursor_down() if where == "down" else options.action_cursor_up()

    def action_pick_none(self) -> None:
        self.dismiss(None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))
