"""Every key gpudash answers, as a table: id, default key, action, description, tooltip.

The ids are what `[keys]` in the config remaps (`refresh-host = "F5"`); `App.set_keymap`
does the rest, so the footer, the help screen and the command palette all show the
remapped keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual.binding import Binding, BindingType

from gpudash.config.keys import TASK_SCREEN_KEYS, key_name


@dataclass(frozen=True)
class Key:
    id: str
    key: str
    action: str
    description: str
    tooltip: str
    show: bool = True
    priority: bool = False


APP_KEYS: tuple[Key, ...] = (
    Key("refresh-host", "r", "refresh_host", "Re-probe", "Probe the selected host again"),
    Key("refresh-all", "R", "refresh_all", "Probe all", "Probe every host again"),
    Key("fleet", "f", "fleet", "Fleet", "One row per host, side by side"),
    Key("filter", "slash", "filter", "Filter", "Filter hosts by name or tag"),
    Key("next-panel", "tab", "app.focus_next", "Next panel", "Move to the next panel", show=False),
    Key(
        "previous-panel",
        "shift+tab",
        "app.focus_previous",
        "Previous panel",
        "Move to the previous panel",
        show=False,
    ),
    Key("expand", "enter", "expand", "Expand", "Show the focused panel full screen"),
    Key("save", "s", "save", "Save", "Save the selected host's raw outputs (probe --save)"),
    Key(
        "tasks",
        "b",
        "tasks",
        "Tasks",
        "Tasks: run one on the selected or marked hosts, see its log",
    ),
    Key("mark", "space", "mark", "Mark", "Mark or unmark the selected host for tasks", show=False),
    Key("help", "question_mark", "help", "Help", "Every key, what it does"),
    Key("quit", "q", "quit", "Quit", "Quit gpudash (stops every probe)", priority=False),
)
"""Bindings of the main screen. `ctrl+p` (command palette) and ctrl+c are Textual's own."""

TOPOLOGY_KEYS: tuple[Key, ...] = (
    Key(
        "toggle-nics",
        "n",
        "toggle_nics",
        "NICs",
        "A column per NIC, or only each GPU's closest NICs",
    ),
)

FINDINGS_KEYS: tuple[Key, ...] = (
    Key(
        "fix",
        "F",
        "fix",
        "Fix",
        "Run the task that fixes a finding on this host (asks which)",
    ),
)
"""One key for every fix: a task's own key there would shadow the host view's keys."""

FLEET_KEYS: tuple[Key, ...] = (
    Key("fleet-sort", "o", "sort", "Sort", "Sort by the next column (or click its header)"),
    Key("fleet-reverse", "O", "reverse", "Reverse", "Reverse the sort order"),
    Key("fleet-open", "enter", "open", "Open", "Open the host under the cursor"),
    Key("fleet-close", "escape,f", "close", "Back", "Back to the host view"),
)

TASKS_KEYS: tuple[Key, ...] = (
    Key(
        "task-cancel",
        TASK_SCREEN_KEYS["task-cancel"][0],
        "cancel",
        TASK_SCREEN_KEYS["task-cancel"][1],
        "Stop the selected run on its host (TERM, then KILL)",
    ),
    Key(
        "tasks-close",
        TASK_SCREEN_KEYS["tasks-close"][0],
        "close",
        TASK_SCREEN_KEYS["tasks-close"][1],
        "Back to the host view (tasks keep running)",
    ),
)
"""The tasks screen's own keys; each task's key (from its config) is bound there too."""

ALL_KEYS = APP_KEYS + TOPOLOGY_KEYS + FINDINGS_KEYS + FLEET_KEYS + TASKS_KEYS
KEY_IDS = frozenset(k.id for k in ALL_KEYS)


VIM_MOVES: tuple[tuple[str, str], ...] = (("j", "down"), ("k", "up"), ("g", "home"), ("G", "end"))
"""`j`/`k`/`g`/`G` as the arrows, home and end (the habit of less, vim, htop and k9s): each
list, table and panel binds them to its own actions for those keys (`moves`)."""


def moves(down: str, up: str, first: str, last: str) -> list[BindingType]:
    """Hidden bindings of j/k/g/G to a widget's own down/up/first/last actions."""
    action = {"down": down, "up": up, "home": first, "end": last}
    return [Binding(key, action[arrow], show=False) for key, arrow in VIM_MOVES]


PANEL_JUMPS = tuple(str(n) for n in range(1, 10))
"""Number keys jump to the host view's panels, in the order they are drawn (main screen only,
so the tasks screen's digit task keys are untouched)."""


def bindings(keys: tuple[Key, ...]) -> list[BindingType]:
    return [
        Binding(
            k.key,
            k.action,
            k.description,
            show=k.show,
            tooltip=k.tooltip,
            id=k.id,
            priority=k.priority,
        )
        for k in keys
    ]


def task_binding(name: str, key: str, title: str, action: str) -> Binding:
    """A task's key as a binding: id `task:NAME`, the task's name in the footer."""
    return Binding(key_name(key), action, name, tooltip=title, id=f"task:{name}")


def keymap(remap: Mapping[str, str]) -> dict[str, str]:
    """The `[keys]` table as a Textual keymap; ids that gpudash does not know are dropped
    here (the config layer reports them to the user)."""
    return {k: v for k, v in remap.items() if k in KEY_IDS}
