"""NO_COLOR without losing the verdict: severity by weight and reverse video, not by hue.

Textual honours NO_COLOR by turning every colour into its grey of the same luminance
(`textual.filter.Monochrome`). Red is darker than yellow, so "fail" came out grey 237 on
grey 233, harder to see than "warn": the worst news was the least visible. This filter runs
in its place and first gives each style that meant a severity a weight of its own: bold red
(fail, ERR!, FAILED) becomes bold reverse on the brightest grey, the most visible thing on
screen; other red (an error line, an unreachable host) and yellow (warn, connecting) become
bold; then the greys as Textual makes them (NO_COLOR: no hue reaches the terminal).
"""

from __future__ import annotations

from functools import lru_cache

from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter, Monochrome, NoColor, monochrome_style

LOUDEST = Style(color="#ffffff", bold=True, reverse=True)
LOUD = Style(bold=True)
LOUD_RED = Style(color="#e8e8e8", bold=True)
"""Red's grey is near black: other red (an error line, a failed host) is bright bold."""


def _hue(color: RichColor | None) -> str:
    """'red', 'yellow' or '' for a style's foreground, by its RGB (ANSI names, the theme's
    $error/$warning hex values alike)."""
    if color is None or color.is_default:
        return ""
    r, g, b = color.get_truecolor()
    if r >= 120 and g < r * 0.55 and b < r * 0.6:
        return "red"
    if r >= 120 and g >= r * 0.55 and b < g * 0.5:
        return "yellow"
    return ""


DEFAULT_COLORS = Style.from_color(RichColor.parse("default"), RichColor.parse("default"))


@lru_cache(4096)
def severity_style(style: Style, native: bool = False) -> Style:
    """`style` weighted by what its colour meant, then in grey (`native`: the terminal's
    own default colours, as Textual's `NoColor` for a native-ANSI app)."""
    hue = _hue(style.color)
    if hue == "red" and style.bold:
        style = style + LOUDEST
    elif hue == "red":
        style = style + LOUD_RED
    elif hue:
        style = style + LOUD
    return style + DEFAULT_COLORS if native else monochrome_style(style)


class SeverityMonochrome(LineFilter):
    """Monochrome that keeps fail > warn > the rest visible (see the module's docstring)."""

    def __init__(self, native: bool = False) -> None:
        super().__init__()
        self.native = native

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        native = self.native
        return [
            Segment(text, None if style is None else severity_style(style, native), None)
            for text, style, _ in segments
        ]


def use_severity_monochrome(filters: list[LineFilter]) -> None:
    """Swap Textual's NO_COLOR filter for `SeverityMonochrome`, in place."""
    for index, found in enumerate(filters):
        if isinstance(found, (Monochrome, NoColor)):
            filters[index] = SeverityMonochrome(native=isinstance(found, NoColor))
