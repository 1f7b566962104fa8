"""What every panel shares: a title, a placeholder until its section arrives, an error line.

A panel redraws only when its section's result object changes (results are frozen and
replaced on every event), so other hosts' and other sections' events never touch it, and
not even then when the new result draws the same (another host with the same facts).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.widgets import Static

from gpudash.model import HostResult, HostState, SectionResult
from gpudash.ui.keys import moves
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
    """A focusable, maximisable box for one section.

    Its first child, `.panel-text`, draws the placeholder, or the section's error line and
    the section itself; a panel with widgets of its own (the topology matrix) yields them from
    `compose_body`, below the text. One text widget, not one per part: each widget is
    mounted, styled and laid out on its own, and the seven panels' parts were ~40 % of the
    widgets the first frame builds."""

    ALLOW_MAXIMIZE = True
    BINDINGS: ClassVar[list[BindingType]] = [
        *moves("scroll_down", "scroll_up", "scroll_home", "scroll_end"),
        Binding("escape", "app.leave_panel", "Hosts", tooltip="Back to the host list"),
    ]
    SECTION: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    COMPONENT_CLASSES: ClassVar[set[str]] = {"panel--error", "panel--muted"}
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
    Panel.-maximized { height: 1fr; max-height: 100%; }
    Panel > .panel-text.-muted { color: $text-muted; }
    Panel > .panel--error { color: $error; }
    Panel > .panel--muted { color: $text-muted; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(id=kw.pop("id", f"panel-{self.SECTION}"), **kw)
        self.border_title = self.TITLE
        self._shown: object = object()  # the SectionResult on screen (identity)
        self._host: str | None = None
        self._error: Text | None = None  # the shown section's error line

    def compose(self) -> ComposeResult:
        yield Static(Text("waiting for the host", style="dim"), classes="panel-text -muted")
        yield from self.compose_body()

    def compose_body(self) -> ComposeResult:
        """Widgets of the panel's own below its text; none by default."""
        return iter(())

    @property
    def text(self) -> Static:
        return self.query_one(".panel-text", Static)

    def on_mount(self) -> None:
        self.set_body_visible(False)

    def set_body_visible(self, visible: bool) -> None:
        for child in self.children[1:]:
            child.display = visible

    def status(self, words: str) -> None:
        """A placeholder line in place of the section."""
        self.text.update(Text(words, style="dim"))
        self.text.set_class(True, "-muted")

    def draw(self, renderable: RenderableType, muted: bool = False) -> None:
        """Show `renderable` as the section (in the muted colour: `muted`), under its error
        line when it has one."""
        self.text.update(renderable if self._error is None else Group(self._error, renderable))
        self.text.set_class(muted, "-muted")

    def show(self, host: HostResult) -> None:
        section = host.sections.get(self.SECTION)
        if section is self._shown and host.name == self._host:
            if section is None:
                self._placeholder(host)
            return
        previous, self._host, self._shown = self._shown, host.name, section
        if _same(section, previous):
            return  # another host with the same facts: what is on screen is right already
        self._error = None
        if section is None:
            self._placeholder(host)
            self.set_body_visible(False)
            return
        if section.error:
            self._error = Text.assemble(("error: ", "bold"), remote(section.error))
            self._error.stylize_before(self.get_component_rich_style("panel--error"))
        if section.data is None:
            self.set_body_visible(False)
            self.text.update(self._error or "")
            self.text.set_class(False, "-muted")
            return
        self.set_body_visible(True)
        self.render_section(section)

    def _placeholder(self, host: HostResult) -> None:
        if host.state is HostState.FAILED:
            self.status("no data: the host did not answer")
        elif host.state is HostState.PENDING:
            self.status("not probed yet")
        else:
            self.status(f"waiting for {self.SECTION}…")

    def render_section(self, section: SectionResult) -> None:
        """Draw `section.data` (never None here). Default: `body`, as the panel's text."""
        self.draw(self.body(section.data))

    def body(self, data: Any) -> RenderableType:
        from gpudash.ui.panels.generic import generic

        return generic(data)
