"""What every panel shares: a title, a placeholder until its section arrives, an error line.

A panel redraws only when its section's result object changes (results are frozen and
replaced on every event), so other hosts' and other sections' events never touch it, and
not even then when the new result draws the same (another host with the same facts). A panel
that also draws from other sections names them in `ALSO` (the GPUs panel's health column):
those count as its own for that test, and reach `render_section` through `self.also`.

A panel is generic over its section's data (`class EnvPanel(Panel[Env])`), so mypy checks
each `body` against the type the section's `parse` returns; `DATA` keeps that type at run
time, `data_of` is the one place section data (an `object` in `SectionResult`) becomes it,
and tests/unit/test_registry.py ties every panel's `DATA` to its section's `parse`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar, cast, get_args, get_origin

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.widgets import Static

from gpudash.model import HostResult, HostState, SectionResult
from gpudash.ui.keys import moves
from gpudash.ui.render import remote

D = TypeVar("D")


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


def _same_also(also: tuple[SectionResult | None, ...], previous: tuple[object, ...]) -> bool:
    """Whether the `ALSO` sections draw like the previous ones (None, not arrived, like None)."""
    return all(
        (a is None and b is None) or _same(a, b) for a, b in zip(also, previous, strict=True)
    )


class Panel(ScrollableContainer, Generic[D], can_focus=True):
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
    ALSO: ClassVar[tuple[str, ...]] = ()
    """Other sections the panel draws from; it redraws when one of them changes too."""
    TITLE: ClassVar[str] = ""
    DATA: ClassVar[type | None] = None
    """The section's data type, from the class's `Panel[T]` base (None: draws no section's
    data, as the findings panel)."""
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

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Panel and isinstance(arg := get_args(base)[0], type):
                cls.DATA = arg

    def __init__(self, **kw: Any) -> None:
        super().__init__(id=kw.pop("id", f"panel-{self.SECTION}"), **kw)
        self.border_title = self.TITLE
        self._shown: object = object()  # the SectionResult on screen (identity)
        self._host: str | None = None
        self._error: Text | None = None  # the shown section's error line
        self._also: tuple[object, ...] = tuple(object() for _ in self.ALSO)  # on screen
        self.also: dict[str, SectionResult | None] = {}
        """The `ALSO` sections of the host drawn, by name, for `render_section`."""

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
        also = tuple(host.sections.get(name) for name in self.ALSO)
        unchanged = all(a is b for a, b in zip(also, self._also, strict=True))
        if section is self._shown and host.name == self._host and unchanged:
            if section is None:
                self._placeholder(host)
            return
        previous, self._host, self._shown = self._shown, host.name, section
        previous_also, self._also = self._also, also
        self.also = dict(zip(self.ALSO, also, strict=True))
        if _same(section, previous) and _same_also(also, previous_also):
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
        wrong = self._wrong_type(section.data)
        if wrong:
            self.set_body_visible(False)
            self.text.update(Text(wrong, style="red"))
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

    def _wrong_type(self, data: object) -> str | None:
        """Why `data` cannot be drawn here (not the panel's type: a replay saved by a gpudash
        whose section had another shape), or None."""
        if self.DATA is None or isinstance(data, self.DATA):
            return None
        return f"cannot draw {self.SECTION}: {type(data).__name__}, not {self.DATA.__name__}"

    def data_of(self, section: SectionResult) -> D:
        """`section.data` as the panel's type: the one cast from `object`, made safe by the
        check in `show` before any `render_section` runs."""
        if wrong := self._wrong_type(section.data):
            raise TypeError(wrong)
        return cast(D, section.data)

    def render_section(self, section: SectionResult) -> None:
        """Draw `section.data` (never None here). Default: `body`, as the panel's text."""
        self.draw(self.body(self.data_of(section)))

    def body(self, data: D) -> RenderableType:
        from gpudash.ui.panels.generic import generic

        return generic(data)
