"""The Models panel: each model dir with its models, sizes and completeness, and free space."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.probe.sections.models import Model, Models
from gpudash.summary import human_bytes
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import dim, remote
from gpudash.ui.widgets.grid import Column, Grid


def _state(model: Model) -> Text:
    if model.complete:
        return Text("complete", style="green")
    why = []
    if model.missing_count:
        why.append(f"{model.missing_count} shards missing")
    if not model.has_config:
        why.append("no config")
    if not model.has_weights:
        why.append("no weights")
    if model.partial_downloads:
        why.append(f"{model.partial_downloads} partial downloads")
    return Text("incomplete: " + (", ".join(why) or "?"), style="bold yellow")


class ModelsPanel(Panel[Models]):
    SECTION = "models"
    TITLE = "Models"

    def body(self, data: Models) -> RenderableType:
        parts: list[RenderableType] = []
        table = Grid(
            Column(give="ellipsis", min_width=8),
            Column(justify="right"),
            Column(give="ellipsis", min_width=8),
            show_header=False,
        )
        rows = 0
        for directory in data.dirs:
            if not directory.exists:
                continue
            table.add_row(
                remote(directory.path, style="bold"), "", dim(f"{len(directory.models)} models")
            )
            for model in directory.models:
                table.add_row(
                    Text.assemble("  ", remote(model.name)),
                    Text(human_bytes(model.size_bytes)),
                    _state(model),
                )
            rows += 1
        missing = [d.path for d in data.dirs if not d.exists]
        if rows:
            parts.append(table)
        else:
            parts.append(dim("no models: none of the model dirs exists"))
        if missing:
            parts.append(Text.assemble(dim("not there: "), remote(", ".join(missing), style="dim")))
        free = Text("free: ", style="dim")
        for i, fs in enumerate(data.filesystems):
            if i:
                free.append("  ")
            free.append(remote(fs.path))
            free.append(f" {human_bytes(fs.free_bytes)}", style="bold")
            if fs.total_bytes:
                free.append(f" of {human_bytes(fs.total_bytes)}", style="dim")
        if data.filesystems:
            parts.append(free)
        parts.extend(remote(n, style="dim") for n in data.notes)
        return Group(*parts)
