"""The key footer: composed only when the keys it shows changed, and without the references
Textual's own keeps to the keys it discarded.

Textual's `Footer` recomposes on every bindings signal of its screen, whether or not the
shown keys changed, and also while its screen is hidden behind another. Opening the fleet
view sent four: three for the fleet screen (it resumes, takes focus, ...) and one for the
host screen beneath it, each a full recompose that mounts and restyles every key (~20-30 ms
each with 1000 hosts, ~100 ms together), all of it landing on the first key pressed after
the view opened. This footer recomposes only a visible footer whose keys differ from the
ones it drew; a hidden one catches up when its screen returns (Textual signals again then).

Textual's recompose also binds every new `FooterKey` to its `compact` reactive with
`data_bind`. The watcher entries that binding leaves on the footer are pruned only when
`compact` itself changes, which it never does, so each recompose kept the previous keys
alive with their styles and render caches: about 1650 objects a round of the selected host,
for as long as the app ran (Textualize/textual#6666, open in 8.2.8). This footer prunes them
after each recompose, by Textual's own rule.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import Footer as TextualFooter
from textual.widgets._footer import FooterKey


class Footer(TextualFooter):
    """`textual.widgets.Footer` that recomposes only when its keys changed, and lets go of
    the keys a recompose removed."""

    _drawn: tuple[Any, ...] | None = None  # what the last compose drew from, see `_keys`

    def _keys(self) -> tuple[Any, ...]:
        """Everything `compose` draws from: the shown bindings of the screen, each with its
        state and key display, and the footer's own switches."""
        if not self._bindings_ready:
            return ()
        app = self.app
        palette = app.COMMAND_PALETTE_BINDING
        return (
            self.compact,
            self.show_command_palette,
            tuple(
                (key, binding, enabled, tooltip, app.get_key_display(binding))
                for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
                if binding.show or key == palette
            ),
        )

    def _visible(self) -> bool:
        """Whether the footer's screen shows: it is on top, or only screens that let the
        one beneath show through (a modal's translucent backdrop) lie above it."""
        mine = self.screen
        for screen in reversed(self.app.screen_stack):
            if screen is mine:
                return True
            if screen.styles.background.a == 1:
                return False
        return False

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            # A key is born compact and bound to the footer's `compact`: each restyled itself
            # twice as it mounted (~15 ms of a recompose). Born with the footer's value, it
            # is styled once. The palette key is not bound, and stays compact as Textual has it.
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            yield widget

    async def recompose(self) -> None:
        if not self.is_attached or not self._visible():
            return  # hidden: its screen signals its bindings again when it comes back
        keys = self._keys()
        if keys == self._drawn:
            return
        self._drawn = keys
        await super().recompose()
        watchers = getattr(self, "__watchers", None) or {}
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries if not node._closing]
