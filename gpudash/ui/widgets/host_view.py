"""The host view: the header line and one panel per section, filling as sections arrive."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from gpudash.model import HostResult
from gpudash.ui.panels import section_panels
from gpudash.ui.panels.base import Panel
from gpudash.ui.panels.findings import FindingsPanel
from gpudash.ui.widgets.system_line import header


class PanelStack(VerticalScroll, can_focus=False):
    """The panels, scrolled together; not itself a tab stop (its panels are)."""


PANELS: tuple[type[Panel], ...] = (FindingsPanel, *section_panels())
"""The findings first, then one panel per registered section (see `gpudash.ui.panels`)."""


class HostView(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("", id="system-line")
        with PanelStack(id="panels"):
            for panel in PANELS:
                yield panel()

    def show(self, host: HostResult) -> None:
        line = self.query_one("#system-line", Static)
        line.update(header(host))
        # Its height follows its text (a long system line wraps to two rows): laid out again
        # once this refresh is drawn, or a switch from a host whose line wrapped could keep
        # its two rows for a short one (a snapshot caught it, one run in five)
        self.call_after_refresh(line.refresh, layout=True)
        for panel in self.query(Panel):
            panel.show(host)
