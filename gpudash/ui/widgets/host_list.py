"""The sidebar: one row per configured host, in config order, with its live state.

Rows are options keyed by host name and replaced in place when a host changes, so the
highlight and the scroll position never jump. The filter hides rows without rebuilding the
others' state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.binding import BindingType
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from gpudash.config.model import HostConfig
from gpudash.model import HostResult
from gpudash.ui.host_state import findings_text, glyph, gpu_summary, state_text
from gpudash.ui.keys import moves
from gpudash.ui.render import remote


def _fit(text: Text, width: int) -> Text:
    if text.cell_len > width:
        text.truncate(max(1, width - 1))
        text.append("…", style="dim")
    return text


MARK = "▸"
"""Drawn before a marked host's name: task keys run on every marked host."""

RUNNING = "⚙"
"""Drawn before the name of a host with a task running (the tasks screen, `b`, shows it)."""


def row(result: HostResult, width: int = 24, marked: bool = False, running: bool = False) -> Text:
    """Two lines, each cut to `width`: '● name' and 'state · 8× H100' ('▸' when marked,
    '⚙' while a task runs there)."""
    first = Text.assemble(glyph(result), " ")
    if marked:
        first.append(MARK + " ", style="bold reverse")
    if running:
        first.append(RUNNING + " ", style="bold yellow")
    first.append(remote(result.name, style="bold"))
    badge = findings_text(
        result, compact=True
    )  # ' ✖1 ▲3': after the name, so the GPUs line keeps room
    if badge.plain and first.cell_len + badge.cell_len <= width:
        first.append_text(badge)
    second = Text("  ")
    second.append(state_text(result, findings=False))
    gpus = gpu_summary(result)
    if gpus is not None and result.state.value != "failed":
        if second.cell_len + 3 + gpus.cell_len > width:
            gpus = gpu_summary(result, tight=True) or gpus  # '8× H100', not '8× H100 80…'
        if result.state.value == "ready" and second.cell_len + 3 + gpus.cell_len > width:
            second = Text("  ")  # the green dot says ready: the GPUs get its room
        else:
            second.append(" · ", style="dim")
        second.append(gpus)
    return Text("\n").join([_fit(first, width), _fit(second, width)])


def matches(host: HostConfig, needle: str) -> bool:
    """Name or any tag contains the needle (case-insensitive); an empty filter matches all."""
    needle = needle.strip().lower()
    if not needle:
        return True
    return needle in host.name.lower() or any(needle in t.lower() for t in host.tags)


class HostList(OptionList):
    """Hosts in config order; posts `HostList.Selected` when the highlight moves."""

    BINDINGS: ClassVar[list[BindingType]] = moves("cursor_down", "cursor_up", "first", "last")

    class Selected(Message):
        """The user moved to another host."""

        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

    def __init__(
        self, hosts: Iterable[HostConfig], results: Mapping[str, HostResult], **kw: object
    ) -> None:
        self._hosts = tuple(hosts)
        self._by_name = {h.name: h for h in self._hosts}
        self._results = dict(results)
        self._needle = ""
        self._marked: frozenset[str] = frozenset()
        self._task_hosts: frozenset[str] = frozenset()
        self._row_width = 24
        super().__init__(*self._build_options(), **kw)  # type: ignore[arg-type]

    def _build_options(self) -> list[Option]:
        return [
            Option(self._row(h.name), id=h.name) for h in self._hosts if matches(h, self._needle)
        ]

    def on_resize(self) -> None:
        width = max(8, self.scrollable_content_region.width - 1)
        if width != self._row_width:
            self._row_width = width
            for name in self.shown_names:
                self.replace_option_prompt(name, self._row(name))

    @property
    def shown_names(self) -> list[str]:
        return [h.name for h in self._hosts if matches(h, self._needle)]

    def update_host(self, result: HostResult) -> None:
        """Redraw one host's row in place."""
        self._results[result.name] = result
        host = self._by_name.get(result.name)
        if host is not None and matches(host, self._needle):  # not `visible`: O(1) per event
            self.replace_option_prompt(result.name, self._row(result.name))

    def set_marked(self, names: set[str]) -> None:
        """Redraw the rows whose mark changed."""
        changed = self._marked ^ frozenset(names)
        self._marked = frozenset(names)
        for name in self.shown_names:
            if name in changed:
                self.replace_option_prompt(name, self._row(name))

    def _row(self, name: str) -> Text:
        return row(
            self._results[name], self._row_width, name in self._marked, name in self._task_hosts
        )

    def set_running(self, names: set[str]) -> None:
        """Redraw the rows whose running-task marker changed."""
        changed = self._task_hosts ^ frozenset(names)
        if not changed:
            return
        self._task_hosts = frozenset(names)
        for name in self.shown_names:
            if name in changed:
                self.replace_option_prompt(name, self._row(name))

    def set_filter(self, needle: str) -> None:
        if needle == self._needle:
            return
        current = self.highlighted_host
        self._needle = needle
        self.clear_options()
        self.add_options(self._build_options())
        visible = self.shown_names
        if current in visible:
            self.highlighted = visible.index(current)
        elif visible:
            self.highlighted = 0

    @property
    def highlighted_host(self) -> str | None:
        if self.highlighted is None:
            return None
        try:
            return self.get_option_at_index(self.highlighted).id
        except Exception:
            return None

    def select_host(self, name: str) -> None:
        visible = self.shown_names
        if name not in visible:
            self.set_filter("")
            visible = self.shown_names
        self.highlighted = visible.index(name)

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Selected(event.option.id))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Selected(event.option.id))
