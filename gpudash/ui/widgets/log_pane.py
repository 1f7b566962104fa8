"""The live log pane: one run's lines, its unfinished line redrawn in place, bounded.

Textual's `Log` draws plain strings (never markup) and caches rendered lines. On top of it
this keeps the run's unfinished line (a `\\r` progress bar's latest state, as the core's
LineAssembler reports it) as the last line, replaced on every update instead of appended,
and caps the lines held (`max_lines`, the same ring size as the app's buffer).

It follows like `tail -f`: new lines keep the view at the bottom until the user scrolls up,
and scrolling back to the bottom (End, G) follows again. Whether it follows is the scroll
position the user chose (`watch_scroll_y`), never re-read from the geometry at each append:
a pane that got shorter (another chain's rows in the Runs table) is not "scrolled up".
The title says which ("following" / "paused: End to follow").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.binding import BindingType
from textual.geometry import Size
from textual.widgets import Log

from gpudash.ui import keys
from gpudash.ui.task_runs import RING_LINES

FOLLOWING = "following"
PAUSED = "paused: End to follow"

CONTINUED = "↪ "
"""Starts each row a long line wraps onto."""


class LogPane(Log, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = keys.moves(
        "scroll_down", "scroll_up", "scroll_home", "scroll_end"
    )
    DEFAULT_CSS = """
    LogPane {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        background: $surface;
        padding: 0 1;
    }
    LogPane:focus { border: round $accent; border-title-color: $text; }
    """

    def __init__(self, **kw: object) -> None:
        super().__init__(max_lines=RING_LINES, auto_scroll=True, **kw)  # type: ignore[arg-type]
        self._partial = ""  # the unfinished line, drawn as the last rows
        self._partial_rows = 0
        self._raw: list[str] = []  # the run's lines as they came (the ring)
        self._rows: list[int] = []  # rows each raw line is drawn on (wrapped)
        self._wrap_at = 0  # the width lines were wrapped at; 0: not laid out yet
        self.following = True  # new lines scroll to the bottom (the user has not scrolled up)
        self._title = ""  # the screen's title; the pane adds whether it follows
        self._live = False  # the run shown may still add lines

    def set_title(self, title: str, live: bool) -> None:
        """The pane's title ("Log · h0 · verify"); while the run shown may still add lines
        (`live`), it gets " · following" or " · paused: End to follow"."""
        self._title, self._live = title, live
        self._draw_title()

    def _draw_title(self) -> None:
        title = self._title or "Log"
        if self._live:
            title += f" · {FOLLOWING if self.following else PAUSED}"
        self.border_title = title

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Every scroll, the user's or ours, lands here: at the bottom it follows, above it
        it is paused (a pane that only changed height keeps its state: no scroll)."""
        super().watch_scroll_y(old_value, new_value)
        following = new_value >= self.max_scroll_y
        if following != self.following:
            self.following = following
            self._draw_title()

    def _pause(self) -> None:
        """The user scrolls up: stop following now, before the scroll's animation moves
        anything (a line arriving meanwhile would otherwise pull the view back down)."""
        if self.following and self.max_scroll_y > 0:
            self.following = False
            self._draw_title()

    def action_scroll_up(self) -> None:
        self._pause()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._pause()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._pause()
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        self.following = True
        self._draw_title()
        self._to_end()

    def on_mouse_scroll_up(self) -> None:
        """Scrolling the log with the wheel pauses it and focuses it, so the End its title
        names works."""
        self._pause()
        self.focus()

    def _to_end(self) -> None:
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    def wrap(self, line: str) -> list[str]:
        """A line as rows of the pane's width: a long error's end (the cause, as a rule)
        stays on screen instead of past the right edge. Continuation rows start with '↪ '."""
        width = self._wrap_at
        if width < 8 or len(line) <= width:
            return [line]
        rows, rest = [line[:width]], line[width:]
        while rest:
            rows.append(CONTINUED + rest[: width - len(CONTINUED)])
            rest = rest[width - len(CONTINUED) :]
        return rows

    def clear(self) -> LogPane:
        super().clear()
        self._raw, self._rows, self._partial, self._partial_rows = [], [], "", 0
        return self

    def _drop_partial(self) -> None:
        if self._partial_rows and self._lines:
            del self._lines[-self._partial_rows :]
            self._render_line_cache.clear()
        self._partial, self._partial_rows = "", 0

    def _set_partial(self, partial: str) -> None:
        if partial:
            rows = self.wrap(partial)
            self._lines.extend(rows)
            self._partial, self._partial_rows = partial, len(rows)
            self._render_line_cache.clear()

    def show_run(self, lines: Iterable[str], partial: str) -> None:
        """Replace everything with a run's buffered lines (the user picked another run)."""
        self.clear()
        self.following = True
        self.append(lines, partial)
        self._to_end()
        self._draw_title()

    def append(self, lines: Iterable[str], partial: str) -> None:
        """New finished lines, and the unfinished line's current state ("" when none)."""
        lines = list(lines)
        if not lines and self._partial_rows and self._partial == partial:
            return
        self._drop_partial()
        if lines:
            self._add(lines[-RING_LINES:])
        self._set_partial(partial)
        self.virtual_size = Size(self._width, len(self._lines))
        self.refresh()
        if self.following:
            self._to_end()

    def _add(self, lines: list[str]) -> None:
        """Log.write_lines without its per-call thread worker: a width from `len` (the
        lines are clean single-width text as a rule) and the ring trimmed from the front."""
        for line in lines:
            rows = self.wrap(line)
            self._lines.extend(rows)
            self._rows.append(len(rows))
            self._width = max(self._width, max(map(len, rows)))
        self._raw.extend(lines)
        excess = len(self._raw) - RING_LINES
        if excess > 0:
            del self._lines[: sum(self._rows[:excess])]
            del self._raw[:excess], self._rows[:excess]
            self._render_line_cache.clear()

    def on_resize(self) -> None:
        """Wrap every line again at the new width (the ring: at most RING_LINES lines)."""
        width = self.scrollable_content_region.width - 1  # a cell for the scrollbar
        if width == self._wrap_at:
            if self.following:  # shorter or taller: the newest line stays in view
                self.call_after_refresh(self._to_end)
            return
        self._wrap_at = width
        raw, partial = self._raw, self._partial
        super().clear()
        self._raw, self._rows, self._partial, self._partial_rows = [], [], "", 0
        self._width = 0
        if raw:
            self._add(raw)
        self._set_partial(partial)
        self.virtual_size = Size(self._width, len(self._lines))
        self._render_line_cache.clear()
        if self.following:
            self.call_after_refresh(self._to_end)

    @property
    def text_lines(self) -> list[str]:
        """What the pane holds, top to bottom, as the lines came (unwrapped; tests and the
        benchmark read this)."""
        return self._raw + ([self._partial] if self._partial else [])
