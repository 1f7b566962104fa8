"""The Serve panel: each served engine on the host, as its state file and the host say.

Per engine: its task, engine, model, port and tp; its state as the host bears it out (a file
that says ready while the engine's pid is gone reads "exited"); the figures measured at
readiness (time to ready with its phases, TTFT, decode tok/s, the attention backend and
whether FlashInfer JIT-compiled at start); or the failure with the log line it was judged
from, quoted, and its why and fix. Lines wrap rather than cut, so an 80-column screen loses
nothing but width.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from gpudash.probe.sections.serve import Serve, brief, phase_words
from gpudash.probe.serve import ServeState
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import dim, remote

_STYLE = {
    "ready": "bold green",
    "failed": "bold red",
    "exited": "bold red",
    "stalled": "bold yellow",
    "starting": "yellow",
    "stopped": "dim",
}


def _head(s: ServeState) -> Text:
    line = Text.assemble(remote(s.file, style="bold"), "  ")
    line.append_text(remote(s.engine or "engine ?"))
    line.append("  ")
    line.append_text(remote(s.name or s.model or "model ?"))
    if s.model and s.name and s.model != s.name:
        line.append_text(dim(" ("))
        line.append_text(remote(s.model, style="dim"))
        line.append_text(dim(")"))
    if s.port is not None:
        port = f"  :{s.port}"
        closed = s.listening is False and s.verdict in ("ready", "starting", "stalled")
        line.append(port, style="bold red" if closed else "")
        if closed:
            line.append(" not listening", style="bold red")
    if s.tp is not None:
        line.append(f"  tp {s.tp}", style="dim")
    return line


def _verdict(s: ServeState, host_now: float | None) -> Text:
    verdict = s.verdict
    line = Text(brief(s, host_now), style=_STYLE.get(verdict, "yellow"))
    if verdict == "failed" and s.phase:
        line.append(f"  in {phase_words(s.phase)}", style="dim")
    if verdict == "exited":
        line.append(f"  pid {s.pid} is gone", style="dim")
    elif s.pid is not None and verdict in ("ready", "starting", "stalled"):
        line.append(f"  pid {s.pid}", style="dim")
    return line


def _ready(s: ServeState) -> list[Text]:
    r = s.ready
    if r is None:
        return []
    lines: list[Text] = []
    backend = Text("attention ", style="dim")
    backend.append_text(remote(r.attention_backend or "not reported"))
    if r.flashinfer_jit is not None:
        jit = "JIT-compiled at start" if r.flashinfer_jit else "no JIT at start"
        backend.append(f" · FlashInfer {jit}", style="dim")
    lines.append(backend)
    if r.phases_s:
        phases = Text("phases ", style="dim")
        for i, (name, seconds) in enumerate(r.phases_s):
            if i:
                phases.append(" · ", style="dim")
            phases.append_text(remote(phase_words(name)))
            phases.append(f" {seconds:.1f}s", style="bold")
        lines.append(phases)
    return lines


def _failure(s: ServeState) -> list[Text]:
    f = s.failure
    if f is None:
        return []
    lines: list[Text] = []
    where = f" (log line {f.lineno})" if f.lineno is not None else ""
    if f.line:
        lines.append(Text.assemble(dim("  “"), remote(f.line, style="red"), dim(f"”{where}")))
    if f.why:
        lines.append(Text.assemble(dim("  why "), remote(f.why)))
    if f.fix:
        lines.append(Text.assemble(dim("  fix "), remote(f.fix, style="bold")))
    if f.source:
        lines.append(Text.assemble(dim("  see "), remote(f.source, style="dim")))
    return lines


def _engine(s: ServeState, host_now: float | None) -> list[RenderableType]:
    parts: list[RenderableType] = [_head(s), _verdict(s, host_now)]
    parts.extend(_ready(s))
    parts.extend(_failure(s))
    if s.verdict == "exited":
        parts.append(dim(f"  `gpudash run serve` launches it again; its log: {s.log or '?'}"))
    parts.extend(remote(n, style="dim") for n in s.notes)
    return parts


class ServePanel(Panel[Serve]):
    SECTION = "serve"
    TITLE = "Serve"

    def body(self, data: Serve) -> RenderableType:
        if not isinstance(data, Serve) or not data.looked:
            return dim("the probe did not look for a served engine")
        if not data.states:
            return dim("no served engine here: `gpudash run serve HOST` launches one")
        parts: list[RenderableType] = []
        for i, state in enumerate(data.states):
            if i:
                parts.append(Text(""))
            parts.extend(_engine(state, data.host_now))
        parts.extend(remote(n, style="dim") for n in data.notes)
        return Group(*parts)
