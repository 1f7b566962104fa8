"""The key footer: one widget that draws the screen's keys as one line.

Textual's `Footer` is a container with a widget per key, recomposed (every key unmounted,
mounted and styled again) on each bindings signal of its screen: ~20-30 ms a time, four
times on opening the fleet view, once on each host switch that changed a fix key, and once
after the first frame, which drew the footer empty. Its keys also leaked: each recompose
left the old ones bound to the footer's `compact` reactive (Textualize/textual#6666).

This footer keeps the keys as data and draws them as text: a bindings signal costs a
comparison, and a repaint when the keys changed. Clicking a key presses it, as on Textual's.
A key whose meaning changes with the state (enter expands a panel, or restores it) is named
by the app's `describe_binding`, where it has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

PALETTE_EDGE = "▏"


@dataclass(frozen=True)
class FooterKey:
    key: str
    display: str
    description: str
    enabled: bool
    tooltip: str
    action: str = ""


PINNED = frozenset({"cancel", "help", "quit"})
"""Actions the footer always shows, at its right end (the tasks screen's cancel among them: its
task keys are listed above the runs too): however many keys a screen or a focused
panel adds, `? Help` and `q Quit` stay visible (keys before them are cut instead)."""


class Footer(Widget, can_focus=False):
    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {"footer--key", "footer--description", "footer--edge"}
    DEFAULT_CSS = """
    Footer {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        & > .footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .footer--edge { color: $foreground 20%; }
    }
    """

    def __init__(self, *, compact: bool = False, **kw: object) -> None:
        """`compact`: no padding around keys and descriptions, a space between keys (Textual's
        compact footer); else each key padded in its colour, keys side by side."""
        super().__init__(**kw)  # type: ignore[arg-type]
        self.compact = compact
        self.keys: tuple[FooterKey, ...] = ()
        self.palette: FooterKey | None = None
        self._spans: list[tuple[int, int, FooterKey]] = []  # drawn cells of each key

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_later(self._bindings_changed, self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is not self.screen or not self.is_attached:
            return
        app = self.app
        describe = getattr(app, "describe_binding", None)
        palette_key = app.COMMAND_PALETTE_BINDING
        keys: list[FooterKey] = []
        palette = None
        seen: set[str] = set()
        for key, (_, binding, enabled, tooltip) in screen.active_bindings.items():
            item = FooterKey(
                key,
                app.get_key_display(binding),
                describe(binding) if describe else binding.description,
                enabled,
                tooltip or binding.tooltip or binding.description,
                binding.action,
            )
            if key == palette_key:
                palette = item if app.ENABLE_COMMAND_PALETTE else None
            elif binding.show and binding.action not in seen:
                seen.add(binding.action)  # one key per action, as Textual's footer shows
                keys.append(item)
        if (tuple(keys), palette) != (self.keys, self.palette):
            self.keys, self.palette = tuple(keys), palette
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer--key")
        description_style = self.get_component_rich_style("footer--description")
        palette = None
        room = self.size.width
        if self.palette is not None:
            palette = self._label(self.palette, key_style, description_style, compact=True)
            room = max(0, room - palette.cell_len - 2)
        others = [k for k in self.keys if k.action not in PINNED]
        pinned = [k for k in self.keys if k.action in PINNED]
        line, spans = self._line(others, key_style, description_style)
        tail, tail_spans = self._line(pinned, key_style, description_style)
        if line.cell_len + tail.cell_len > room:
            # Cut the screen's own keys, never Help and Quit.
            cut = max(0, room - tail.cell_len - 1)
            line.truncate(cut)
            spans = [(a, min(b, cut), k) for a, b, k in spans if a < cut]
            line.append("…" if cut else "", style="dim")
        offset = line.cell_len
        line.append_text(tail)
        spans += [(a + offset, b + offset, k) for a, b, k in tail_spans]
        if palette is not None and self.palette is not None:
            # Docked right, as Textual's: always in the compact style, a blank cell after it.
            start = max(0, self.size.width - palette.cell_len - 2)
            line.truncate(start, pad=True)
            spans = [(a, min(b, start), k) for a, b, k in spans if a < start]
            line.append(PALETTE_EDGE, self.get_component_rich_style("footer--edge"))
            spans.append((start + 1, start + 1 + palette.cell_len, self.palette))
            line.append_text(palette)
            line.append(" ")
        self._spans = spans
        return line

    def _line(
        self, items: list[FooterKey], key_style: Style, description_style: Style
    ) -> tuple[Text, list[tuple[int, int, FooterKey]]]:
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, FooterKey]] = []
        for item in items:
            start = line.cell_len
            line.append_text(self._label(item, key_style, description_style))
            spans.append((start, line.cell_len, item))
            if self.compact:
                line.append(" ")
        return line, spans

    def _label(
        self, item: FooterKey, key_style: Style, description_style: Style, compact: bool = False
    ) -> Text:
        compact = compact or self.compact
        pad = "" if compact else " "
        label = Text.assemble(
            (f"{pad}{item.display}{pad}", key_style),
            (f" {item.description}" if compact else f"{item.description} ", description_style),
        )
        if not item.enabled:
            label.stylize("dim")
        return label

    def key_at(self, x: int) -> FooterKey | None:
        return next((item for start, end, item in self._spans if start <= x < end), None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        item = self.key_at(event.x)
        if item is None:
            return
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        item = self.key_at(event.x)
        self.tooltip = item.tooltip if item is not None else None
