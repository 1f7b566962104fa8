"""The Toolkit panel: nvcc versions and paths, /usr/local/cuda, driver, NCCL, cuDNN."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from gpudash.probe.sections.toolkit import Lib, Toolkit
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import dim, remote
from gpudash.ui.widgets.grid import Column, Grid


def _grid() -> Grid:
    return Grid(Column(style="bold"), Column(give="wrap"), show_header=False)


def _lib_line(libs: tuple[Lib, ...]) -> Text:
    if not libs:
        return dim("not found")
    out = Text()
    for i, lib in enumerate(libs):
        if i:
            out.append("  ")
        out.append(remote(lib.version or "?", style="bold"))
        out.append(" ")
        out.append(remote(lib.name, style="dim"))
    return out


class ToolkitPanel(Panel[Toolkit]):
    SECTION = "toolkit"
    TITLE = "Toolkit"

    def body(self, data: Toolkit) -> RenderableType:
        table = _grid()
        if not data.nvcc:
            table.add_row("nvcc", dim("not found"))
        for nvcc in data.nvcc:
            line = remote(nvcc.version or nvcc.release or "?", style="" if nvcc.version else "red")
            line.append("  ")
            line.append(remote(nvcc.path, style="dim"))
            if nvcc.realpath and nvcc.realpath != nvcc.path:
                line.append(" → ", style="dim")
                line.append(remote(nvcc.realpath, style="dim"))
            if nvcc.error:
                line.append("  ")
                line.append(remote(nvcc.error, style="red"))
            table.add_row("nvcc", line)
        target = data.cuda_symlink
        if not data.cuda_installs:
            table.add_row("CUDA", dim("no toolkit under /usr/local"))
        for install in data.cuda_installs:
            line = Text.assemble(remote(install.version or "?", style="bold"), "  ")
            line.append(remote(install.path))
            if target and target.rstrip("/") == install.path.rstrip("/"):
                line.append("  ← /usr/local/cuda", style="green")
            table.add_row("CUDA", line)
        if target and not any(i.path.rstrip("/") == target.rstrip("/") for i in data.cuda_installs):
            table.add_row("CUDA", Text.assemble("/usr/local/cuda → ", remote(target)))
        table.add_row("driver", remote(data.driver_version))
        table.add_row("NCCL", _lib_line(data.nccl))
        table.add_row("cuDNN", _lib_line(data.cudnn))
        for note in data.notes:
            table.add_row("", remote(note, style="dim"))
        return table
