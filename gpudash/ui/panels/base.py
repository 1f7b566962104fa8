"""What every panel shares: a title, a placeholder until its section arrives, an error line.

A panel redraws only when its section's result object changes (results are frozen and
replaced on every event), so other hosts' and other sections' events never touch it, and
not even then when the new result draws the same (another host with the same facts).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.widgets import Static

from gpudash.model import HostResult, HostState, SectionResult
from gpudash.ui.render import remote


def _same(section: SectionResult | None, previous: object) -> bool:
    """Whether `section` draws exactly like `previous`: a panel draws only the data and the
    error. Hosts of one fleet mostly share a section's facts, so moving between them then
    costs no re-render and no re-layout (the dataclasses compare by value)."""
    return (
        section is not None
        and isinstance(previous, SectionResult)
        and section.error == previous.error
        and section.data == previous.data
    )


class Panel(ScrollableContainer, can_focus=True):
    """A focusable, maximisable box for one section."""

    ALLOW_MAXIMIZE = True
    SECTION: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    DEFAULT_CSS = """
    Panel {
        height: auto;
        max-height: 100%;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
        overflow-x: auto;
        overflow-y: auto;
    }
    Panel:focus, Panel:focus-within {
        border: round $accent;
        border-title-color: $text;
    }
    Panel > .panel-status { color: $text-muted; }
    Panel > .panel-error { color: $error; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(id=kw.pop("id", f"panel-{self.SECTION}"), **kw)
        self.border_title = self.TITLE
        self._shown: object = object()  # the SectionResult on screen (identity)
        self._host: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("waiting for the host", style="dim"), classes="panel-status")
        yield Static("", classes="panel-error")
        yield from self.compose_body()

    def compose_body(self) -> ComposeResult:
        yield Static("", classes="panel-body")

    def on_mount(self) -> None:
        self.query_one(".panel-error").display = False
        self.set_body_visible(False)

    def set_body_visible(self, visible: bool) -> None:
        for child in self.children[2:]:
            child.display = visible

    def show(self, host: HostResult) -> None:
        section = host.sections.get(self.SECTION)
        if section is self._shown and host.name == self._host:
            if section is None:
                self._placeholder(host)
            return
        previous, self._host, self._shown = self._shown, host.name, section
        if _same(section, previous):
            return  # another host with the same facts: what is on screen is right already
        status = self.query_one(".panel-status", Static)
        error = self.query_one(".panel-error", Static)
        if section is None:
            self._placeholder(host)
            error.display = False
            self.set_body_visible(False)
            return
        error.display = bool(section.error)
        if section.error:
            error.update(Text.assemble(("error: ", "bold"), remote(section.error)))
        status.display = False
        if section.data is None:
            self.set_body_visible(False)
            return
        self.set_body_visible(True)
        self.render_section(section)

    def _placeholder(self, host: HostResult) -> None:
        status = self.query_one(".panel-status", Static)
        status.display = True
        if host.state is HostState.FAILED:
            status.update(Text("no data: the host did not answer", style="dim"))
        elif host.state is HostState.PENDING:
            status.update(Text("not probed yet", style="dim"))
        else:
            status.update(Text(f"waiting for {self.SECTION}…", style="dim"))

    def render_section(self, section: SectionResult) -> None:
        """Draw `section.data` (never None here). Default: the generic renderer."""
        self.query_one(".panel-body", Static).update(self.body(section.data))

    def body(self, data: Any) -> RenderableType:
        from gpudash.ui.panels.generic import generic

        return generic(data)
