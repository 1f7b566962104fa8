"""The host screen: laid out once at start-up, not four times.

Textual lays a new screen out when it resumes, then sends it a `Resize` of the terminal's
size up to three more times as the app starts (the app's own start, the driver's first size
report, the terminal's in-band resize reply), each a full reflow and repaint of every panel.
The first of them also adds the width class (`-narrow`, `-normal`, `-wide`), which restyles
every widget, so the first frame was drawn without it: at 80 columns it showed the sidebar at
its 100-column width and then jumped. On a 2-CPU machine the three cost ~120 ms, right when
the first sections arrive to be drawn.

This screen takes its width class before its first layout and ignores a resize to the size
it already has, so only a real change of size reflows it; nor does its first resume restyle
the widgets it has just styled.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.geometry import Size
from textual.screen import Screen


def width_classes(width: int, breakpoints: list[tuple[int, str]]) -> dict[str, bool]:
    """Each breakpoint's class, on for the widest breakpoint `width` reaches (Textual's rule)."""
    reached = [(at, name) for at, name in breakpoints if width >= at]
    on = max(reached)[1] if reached else None
    return {name: name == on for _, name in breakpoints}


class MainScreen(Screen[Any]):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._drawn_size: Size | None = None

    def _breakpoints(self) -> list[tuple[int, str]]:
        own = self.HORIZONTAL_BREAKPOINTS
        return list((self.app.HORIZONTAL_BREAKPOINTS or []) if own is None else own or [])

    def on_compose(self) -> None:
        """Before anything is styled: the classes cost nothing yet."""
        self.update_classes(width_classes(self.app.size.width, self._breakpoints()), update=False)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """The first resume restyles nothing: every widget was styled as it mounted, a
        moment before, and restyling all of them again was ~10 % of building the screen.
        Later resumes (back from the fleet or tasks screen) restyle as Textual's do."""
        if self._drawn_size is None:
            event.refresh_styles = False
        self._drawn_size = self.app.size  # what Screen's own resume handler lays out at

    def on_resize(self, event: events.Resize) -> None:
        """Subclass handlers run first: at an unchanged size, Textual's is skipped."""
        if event.size == self._drawn_size:
            event.stop()
            event.prevent_default()
        else:
            self._drawn_size = event.size

    def watch_maximized(self) -> None:
        """Enter expands a panel or restores it: the footer names which (`describe_binding`)."""
        self.refresh_bindings()
