"""The `?` screen: every key gpudash answers, as currently mapped, and what it does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpudash.ui import keys

SECTIONS = (
    ("Everywhere", keys.APP_KEYS),
    ("Topology panel", keys.TOPOLOGY_KEYS),
    ("Findings panel", keys.FINDINGS_KEYS),
    ("Fleet view", keys.FLEET_KEYS),
    ("Tasks screen", keys.TASKS_KEYS),
)
EXTRA = (
    ("ctrl+p", "Command palette: every action by name, and the theme"),
    ("↑ ↓ j k / mouse", "Select a host (sidebar), a row, or scroll the focused panel"),
    ("g G", "First and last host or row; top and bottom of a panel"),
    ("1-9", "Jump to the host view's Nth panel (1 is Findings)"),
    ("escape", "Leave the filter, a full-screen panel, a panel (to the host list), this screen"),
    ("ctrl+c", "Quit (copies instead when text is selected)"),
)


def help_table(
    app_keymap: Mapping[str, str],
    display: Callable[[Binding], str],
    tasks: Mapping[str, Any] | None = None,
) -> Table:
    table = Table(box=None, padding=(0, 2, 0, 0), show_header=False, expand=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for title, group in SECTIONS:
        table.add_row(Text(title, style="bold underline"), "")
        for k in group:
            key = app_keymap.get(k.id, k.key)
            shown = ", ".join(display(Binding(part.strip(), k.action)) for part in key.split(","))
            table.add_row(Text(shown, style="bold"), Text(k.tooltip))
        table.add_row("", "")
    if tasks:
        table.add_row(
            Text("Tasks", style="bold underline"),
            Text("keys from the config, live in the tasks screen", style="dim"),
        )
        for name, spec in tasks.items():
            if spec.key:
                table.add_row(Text(spec.key, style="bold"), Text(f"{name}: {spec.title}"))
        table.add_row("", "")
    table.add_row(Text("Also", style="bold underline"), "")
    for key, words in EXTRA:
        table.add_row(Text(key, style="bold"), Text(words))
    return table


class HelpScroll(VerticalScroll):
    """The help's text, scrolled by j/k/g/G as every other list and panel is."""

    BINDINGS: ClassVar[list[BindingType]] = keys.moves(
        "scroll_down", "scroll_up", "scroll_home", "scroll_end"
    )


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,question_mark,q",
            "dismiss",
            "Close",
            tooltip="Close the help screen",
            id="help-close",
        ),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > HelpScroll {
        width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; border-title-color: $text; padding: 0 1;
        background: $surface;
    }
    HelpScreen Static { width: 100%; }
    """

    def __init__(self, keymap: Mapping[str, str], tasks: Mapping[str, Any] | None = None) -> None:
        """`keymap`: the key ids the config remaps; `tasks`: the task specs (their keys)."""
        super().__init__()
        self._keymap = keymap
        self._tasks = tasks

    def compose(self) -> ComposeResult:
        with HelpScroll() as box:
            box.border_title = "gpudash keys"
            box.border_subtitle = "escape to close"
            yield Static(help_table(self._keymap, self.app.get_key_display, self._tasks))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
