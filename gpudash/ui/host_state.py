"""A host's state in words and one style, shared by the sidebar and the fleet view."""

from __future__ import annotations

from rich.text import Text

from gpudash.model import HostResult, HostState
from gpudash.ui.render import remote

GLYPHS = {
    HostState.PENDING: ("·", "dim"),
    HostState.CONNECTING: ("○", "yellow"),
    HostState.PROBING: ("◐", "yellow"),
    HostState.READY: ("●", "green"),
    HostState.FAILED: ("✖", "red"),
}


def glyph(result: HostResult) -> Text:
    char, style = GLYPHS[result.state]
    return Text(char, style=style)


def state_text(result: HostResult, *, findings: bool = True) -> Text:
    """'connecting', 'probing 3/7', 'ready · 1 fail', 'unreachable: <reason>'."""
    state = result.state
    if state is HostState.PENDING:
        return Text("waiting", style="dim")
    if state is HostState.CONNECTING:
        return Text("connecting", style="yellow")
    if state is HostState.PROBING:
        total = result.sections_total or 7
        return Text(f"probing {result.done}/{total}", style="yellow")
    if state is HostState.READY:
        failed = sum(1 for s in result.sections.values() if s.error)
        if failed:
            out = Text(f"ready, {failed} section{'s' * (failed > 1)} failed", style="yellow")
        else:
            out = Text("ready", style="green")
        return out.append_text(findings_text(result)) if findings else out
    got_data = any(s.data is not None for s in result.sections.values())
    word = "failed" if got_data else "unreachable"
    out = Text(word, style="bold red")
    if result.error:
        reason = result.error
        if reason.startswith(f"{result.name}: "):  # the host is named beside it already
            reason = reason[len(result.name) + 2 :]
        out.append(": ", style="red")
        out.append(remote(reason, style="red"))
    return out


_SEVERITY_STYLE = {"fail": "bold red", "warn": "yellow", "info": "cyan"}


_COMPACT = {"fail": "✖", "warn": "▲"}


def findings_text(result: HostResult, *, compact: bool = False) -> Text:
    """' · 2 fail · 1 warn' (compact: ' ✖2 ▲1'): problem counts, each in its colour."""
    counts: dict[str, int] = {}
    for finding in result.findings:
        level = str(getattr(finding.severity, "value", finding.severity))
        counts[level] = counts.get(level, 0) + 1
    out = Text()
    for level in ("fail", "warn"):
        if counts.get(level):
            label = (
                f" {_COMPACT[level]}{counts[level]}" if compact else f" · {counts[level]} {level}"
            )
            out.append(label, style=_SEVERITY_STYLE[level])
    return out


def short_gpu_name(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3': the vendor says nothing in a list."""
    if not name.strip():
        return "?"  # a GPU in ERR! can lose its name
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def gpu_summary(result: HostResult) -> Text | None:
    """'8× H100 80GB HBM3', or the reason there are none, once the gpus section is in."""
    data = result.data("gpus")
    if data is None:
        return None
    if getattr(data, "missing", None):
        return remote(data.missing, style="dim")
    gpus = getattr(data, "gpus", ())
    if not gpus:
        return Text("no GPUs", style="dim")
    groups: dict[str, int] = {}
    for gpu in gpus:
        groups[gpu.name] = groups.get(gpu.name, 0) + 1
    out = Text()
    for i, (name, count) in enumerate(groups.items()):
        if i:
            out.append(", ")
        out.append(f"{count}× ")
        out.append(remote(short_gpu_name(name)))
    if any(g.error for g in gpus):
        out.append(" ERR!", style="bold red")
    return out
