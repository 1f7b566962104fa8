"""A host's state in words and one style, shared by the sidebar and the fleet view."""

from __future__ import annotations

import re

from rich.text import Text

from gpudash.model import NOT_SAVED, HostResult, HostState
from gpudash.text import clean_line
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


def state_text(result: HostResult, *, findings: bool = True, compact: bool = False) -> Text:
    """'connecting', 'probing 3/7', 'ready · 1 fail' (compact: 'ready ✖1'),
    'unreachable: <reason>'."""
    state = result.state
    if state is HostState.PENDING:
        return Text("waiting", style="dim")
    if state is HostState.CONNECTING:
        return Text("connecting", style="yellow")
    if state is HostState.PROBING:
        return Text(_probing(result), style="yellow")
    if state is HostState.READY:
        failed = _failed_sections(result)
        out = Text(failed, style="yellow") if failed else Text("ready", style="green")
        return out.append_text(findings_text(result, compact=compact)) if findings else out
    out = Text(_failed_word(result), style="bold red")
    reason = _reason(result)
    if reason is not None:
        out.append(": ", style="red")
        out.append(remote(reason, style="red"))
    return out


def state_words(result: HostResult, *, compact: bool = False) -> str:
    """`state_text(result, compact=compact).plain`, without building it: the fleet view
    measures and counts every host's state as probe events arrive (a tenth of the time of
    `state_text`)."""
    state = result.state
    if state is HostState.PENDING:
        return "waiting"
    if state is HostState.CONNECTING:
        return "connecting"
    if state is HostState.PROBING:
        return _probing(result)
    if state is HostState.READY:
        counts = _finding_counts(result)
        return (_failed_sections(result) or "ready") + "".join(
            f" {_COMPACT[level]}{counts[level]}" if compact else f" · {counts[level]} {level}"
            for level in ("fail", "warn")
            if counts.get(level)
        )
    reason = _reason(result)
    return _failed_word(result) + ("" if reason is None else f": {clean_line(reason)}")


def _probing(result: HostResult) -> str:
    return f"probing {result.done}/{result.sections_total or 7}"


def _failed_sections(result: HostResult) -> str:
    """'ready, 2 sections failed', or '' when none did."""
    failed = sum(1 for s in result.sections.values() if s.error and s.error != NOT_SAVED)
    return f"ready, {failed} section{'s' * (failed > 1)} failed" if failed else ""


def _failed_word(result: HostResult) -> str:
    got_data = any(s.data is not None for s in result.sections.values())
    return "failed" if got_data else "unreachable"


def _reason(result: HostResult) -> str | None:
    """The error, less the host's name where it leads (the host is named beside it)."""
    reason = result.error
    if not reason:
        return None
    if reason.startswith(f"{result.name}: "):
        reason = reason[len(result.name) + 2 :]
    return reason


_SEVERITY_STYLE = {"fail": "bold red", "warn": "yellow", "info": "cyan"}


_COMPACT = {"fail": "✖", "warn": "▲"}


def findings_text(result: HostResult, *, compact: bool = False) -> Text:
    """' · 2 fail · 1 warn' (compact: ' ✖2 ▲1'): problem counts, each in its colour."""
    counts = _finding_counts(result)
    out = Text()
    for level in ("fail", "warn"):
        if counts.get(level):
            label = (
                f" {_COMPACT[level]}{counts[level]}" if compact else f" · {counts[level]} {level}"
            )
            out.append(label, style=_SEVERITY_STYLE[level])
    return out


def _finding_counts(result: HostResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for finding in result.findings:
        level = str(getattr(finding.severity, "value", finding.severity))
        counts[level] = counts.get(level, 0) + 1
    return counts


_BRANDS = ("NVIDIA ", "Tesla ", "GeForce ", "Quadro ")
"""Vendor and product-line words: the same on every GPU of a kind, so they say nothing in a
list ('NVIDIA GeForce RTX 4090' -> 'RTX 4090'; 'NVIDIA RTX A6000' keeps its RTX)."""

_PACKAGING = re.compile(r"^(?:\d+GB|HBM\d*e?|PCIe|SXM\d*|MIG)$", re.IGNORECASE)
"""Memory size and form factor tokens ('80GB', 'HBM3', 'PCIe', 'SXM4'), dropped only where a
list is tight (the sidebar): the model stays, the GPUs panel names the rest."""


def short_gpu_name(name: str, tight: bool = False) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3' (`tight`: 'H100'); 'NVIDIA GeForce RTX
    4090' -> 'RTX 4090'; 'NVIDIA A100-SXM4-80GB' (tight) -> 'A100'."""
    if not name.strip():
        return "?"  # a GPU in ERR! can lose its name
    for prefix in _BRANDS:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    if tight:
        words = [w for w in re.split(r"[ -]", name) if w and not _PACKAGING.match(w)]
        name = " ".join(words) or name
    return name


def gpu_summary(result: HostResult, tight: bool = False) -> Text | None:
    """'8× H100 80GB HBM3' (`tight`: '8× H100'), or the reason there are none, once the gpus
    section is in."""
    from gpudash.probe.sections.gpus import Gpus

    data = result.data("gpus", Gpus)
    if data is None:
        return None
    if data.no_smi:
        return Text("no nvidia-smi", style="dim")  # the row's room; the panel says more
    if data.missing:
        return remote(data.missing, style="dim")
    gpus = data.gpus
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
        out.append(remote(short_gpu_name(name, tight)))
    if any(g.error for g in gpus):
        out.append(" ERR!", style="bold red")
    return out
