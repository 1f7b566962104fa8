"""The key footer, without the references Textual's own keeps to the keys it discarded.

Textual's `Footer` recomposes whenever the screen's bindings change (here: each time the
selected host's findings offer other fix keys, twice a probe round) and binds every new
`FooterKey` to its `compact` reactive with `data_bind`. The watcher entries that binding
leaves on the footer are pruned only when `compact` itself changes, which it never does, so
each recompose kept the previous keys alive with their styles and render caches: about 1650
objects a round of the selected host, for as long as the app ran (Textualize/textual#6666,
open in 8.2.8). This footer prunes them after each recompose, by Textual's own rule.
"""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    """`textual.widgets.Footer` that lets go of the keys a recompose removed."""

    async def recompose(self) -> None:
        await super().recompose()
        watchers = getattr(self, "__watchers", None) or {}
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries if not node._closing]
