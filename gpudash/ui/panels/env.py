"""The Env panel: pythons, pip, uv, conda, and each venv with the inference stack's versions."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.probe.sections.env import Env, Python, Venv
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import NA, dim, join, remote
from gpudash.ui.widgets.grid import Column, Grid

STACK = ("torch", "sglang", "vllm", "flashinfer-python", "transformers")
"""The packages an inference venv is judged by, in the order they are shown."""

LABELS = {"flashinfer-python": "flashinfer"}


def _package(venv: Venv, name: str) -> str | None:
    packages = venv.packages
    if name in packages:
        return packages[name]
    alt = name.replace("-python", "")
    return packages.get(alt)


def pythons_grid(pythons: tuple[Python, ...]) -> Grid | Text:
    """A line per version, with the interpreters that report it in PATH order ("?" last:
    those whose `--version` failed). A pyenv shims directory alone is a dozen pythons,
    most of them one interpreter or none: a line each, or one long list, read as noise."""
    if not pythons:
        return Text.assemble("python ", dim("not found"))
    groups: dict[str | None, list[str]] = {}
    for python in pythons:
        groups.setdefault(python.version, []).append(python.path)
    if None in groups:
        groups[None] = groups.pop(None)
    grid = Grid(Column(), Column(), Column(give="wrap", min_width=12), show_header=False)
    for i, (version, paths) in enumerate(groups.items()):
        shown = remote(version, style="bold") if version else dim("?")
        grid.add_row("python" if i == 0 else "", shown, _paths(paths))
    return grid


def _paths(paths: list[str]) -> Text:
    """'/root/.pyenv/shims/python3, python3.11, python': a directory once per run."""
    out = Text()
    last = None
    for i, path in enumerate(paths):
        directory, _, name = path.rpartition("/")
        if i:
            out.append(", ")
        out.append_text(remote(name if directory and directory == last else path, style="dim"))
        last = directory
    return out


def tools_line(data: Env) -> Text:
    """pip, uv and conda on one line (the pythons have `pythons_grid`)."""
    bits: list[Text | str] = []
    pips = sorted({p.version for p in data.pip})
    bits.append(Text.assemble("pip ", remote(", ".join(pips)) if pips else dim("none")))
    uv = data.uv
    bits.append(
        Text.assemble("uv ", remote(uv.version or "found") if uv and uv.path else dim("none"))
    )
    conda = [Text.assemble(remote(t.name), " ", remote(t.version or "")) for t in data.conda]
    bits.append(Text.assemble("conda ", join(*conda, sep=", ") if conda else dim("none")))
    return join(*bits)


def venv_table(venvs: tuple[Venv, ...]) -> Grid:
    table = Grid(
        Column(Text("venv", style="bold"), give="ellipsis", min_width=8),
        Column(Text("py", style="bold")),
        *(Column(Text(LABELS.get(name, name), style="bold")) for name in STACK),
    )
    for venv in venvs:
        cells = []
        for name in STACK:
            version = _package(venv, name)
            cell = remote(version) if version else dim(NA)
            if name == "torch" and version and venv.torch_cuda:
                cell.append(f" cu{venv.torch_cuda}", style="dim")
            cells.append(cell)
        table.add_row(remote(venv.path), remote(venv.python), *cells)
    return table


class EnvPanel(Panel[Env]):
    SECTION = "env"
    TITLE = "Env"

    def body(self, data: Env) -> RenderableType:
        parts: list[RenderableType] = [pythons_grid(data.pythons), tools_line(data)]
        active = [
            Text.assemble(label, remote(value))
            for label, value in (
                ("VIRTUAL_ENV=", data.virtual_env),
                ("CONDA_PREFIX=", data.conda_prefix),
            )
            if value
        ]
        if active:
            parts.append(join(*active))
        if data.venvs:
            parts.append(venv_table(data.venvs))
        else:
            parts.append(dim("no venvs found in the configured venv paths"))
        parts.extend(remote(n, style="dim") for n in data.notes)
        return Group(*parts)
