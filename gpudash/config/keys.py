"""Which keys a task may take: the tasks screen's own keys and the keys that work everywhere.

A task's `key` is live in the tasks screen only (the findings panel fixes with one key of its
own, `F`, so no task key shadows a host-view key there), where it would shadow any other
binding on the same key. So a task key that equals one of those keys, as the defaults or
`[keys]` set them, is a config error naming the key, never a silent shadow.
The app's key table (gpudash/ui/keys.py) takes the defaults below, so the two cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpudash.config.lines import KeyPath
from gpudash.config.values import Report, show

TASK_SCREEN_KEYS: Mapping[str, tuple[str, str]] = {
    "task-cancel": ("x", "Cancel"),
    "tasks-close": ("escape,b", "Back"),
}
"""Keys of the tasks screen, by binding id: (default keys, description)."""

ALWAYS_KEYS: Mapping[str, tuple[str, str]] = {
    "help": ("question_mark", "Help"),
    "quit": ("q", "Quit"),
    "next-panel": ("tab", "Next panel"),
    "previous-panel": ("shift+tab", "Previous panel"),
}
"""App keys that stay live on the tasks screen, by binding id."""

FIXED_KEYS: Mapping[str, str] = {
    "up": "moves the cursor",
    "down": "moves the cursor",
    "left": "scrolls",
    "right": "scrolls",
    "pageup": "scrolls",
    "pagedown": "scrolls",
    "home": "scrolls",
    "end": "scrolls",
    "enter": "selects",
    "ctrl+p": "opens the command palette",
    "ctrl+c": "quits",
    "j": "moves the cursor down",
    "k": "moves the cursor up",
    "g": "moves to the first row",
    "G": "moves to the last row",
}
"""Keys the tasks screen's widgets answer themselves (Textual's, and the vim-style moves
gpudash/ui/keys.py binds on every list); no task may take them."""

_CHAR_NAMES = {
    "?": "question_mark",
    "/": "slash",
    " ": "space",
    ",": "comma",
    ".": "full_stop",
    "-": "minus",
    "+": "plus",
    "=": "equals_sign",
    "!": "exclamation_mark",
    "*": "asterisk",
    "#": "number_sign",
    "@": "at",
    "[": "left_square_bracket",
    "]": "right_square_bracket",
    ":": "colon",
    ";": "semicolon",
}


def key_name(key: str) -> str:
    """A key as Textual names it: "?" -> "question_mark"; letters and names unchanged."""
    return _CHAR_NAMES.get(key, key)


def _split(keys: str) -> list[str]:
    return [key_name(k.strip()) for k in keys.split(",") if k.strip()]


def reserved(remap: Mapping[str, object]) -> dict[str, tuple[str, str | None]]:
    """Every key a task may not take -> (what it does already, the `[keys]` id that put it
    there, or None for a default)."""
    out: dict[str, tuple[str, str | None]] = {
        key: (f"it {what}", None) for key, what in FIXED_KEYS.items()
    }
    for table, where in ((ALWAYS_KEYS, "everywhere"), (TASK_SCREEN_KEYS, "in the tasks screen")):
        for binding_id, (default, description) in table.items():
            remapped = binding_id in remap
            for key in _split(str(remap.get(binding_id, default))):
                what = f"it is {description} ({binding_id}) {where}"
                out[key] = (what, binding_id if remapped else None)
    return out


def check_task_keys(
    tasks: Mapping[str, object], raw_tasks: object, remap: Mapping[str, object], report: Report
) -> None:
    """Report each task key that another binding of the tasks screen already answers: at the
    `[keys]` entry when a remap caused it, else at the task's `key`."""
    taken = reserved(remap)
    own = raw_tasks if isinstance(raw_tasks, dict) else {}
    for name, spec in tasks.items():
        key = getattr(spec, "key", None)
        if key is None or key_name(key) not in taken:
            continue
        why, remapped = taken[key_name(key)]
        if remapped is not None:
            report(("keys", remapped), f"key {show(key)} is task {show(name)}'s key")
            continue
        table = own.get(name)
        mine = isinstance(table, dict) and "key" in table
        path: KeyPath = ("tasks", name, "key") if mine else ("builtin", name, "key")
        report(path, f"key {show(key)} cannot run a task: {why}")
