"""The live log pane: one run's lines, its unfinished line redrawn in place, bounded.

Textual's `Log` draws plain strings (never markup) and caches rendered lines. On top of it
this keeps the run's unfinished line (a `\\r` progress bar's latest state, as the core's
LineAssembler reports it) as the last line, replaced on every update instead of appended,
and caps the lines held (`max_lines`, the same ring size as the app's buffer).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.geometry import Size
from textual.widgets import Log

from gpudash.ui.task_runs import RING_LINES


class LogPane(Log, can_focus=True):
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
        self._partial = False

    def _drop_partial(self) -> None:
        if self._partial and self._lines:
            self._lines.pop()
            self._render_line_cache.clear()
        self._partial = False

    def _set_partial(self, partial: str) -> None:
        if partial:
            self._lines.append(partial)
            self._partial = True
            self._render_line_cache.clear()

    def show_run(self, lines: Iterable[str], partial: str) -> None:
        """Replace everything with a run's buffered lines (the user picked another run)."""
        self.clear()
        self._partial = False
        self.append(lines, partial)
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    def append(self, lines: Iterable[str], partial: str) -> None:
        """New finished lines, and the unfinished line's current state ("" when none)."""
        lines = list(lines)
        if not lines and self._partial and self._lines and self._lines[-1] == partial:
            return
        at_end = self.is_vertical_scroll_end
        self._drop_partial()
        if lines:
            self._add(lines[-RING_LINES:])
        self._set_partial(partial)
        self.virtual_size = Size(self._width, len(self._lines))
        self.refresh()
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def _add(self, lines: list[str]) -> None:
        """Log.write_lines without its per-call thread worker: a width from `len` (the
        lines are clean single-width text as a rule) and the ring trimmed from the front."""
        self._lines.extend(lines)
        self._width = max(self._width, max(map(len, lines)))
        excess = len(self._lines) - RING_LINES
        if excess > 0:
            del self._lines[:excess]
            self._render_line_cache.clear()

    @property
    def text_lines(self) -> list[str]:
        """What the pane holds, top to bottom (tests and the benchmark read this)."""
        return list(self._lines)
