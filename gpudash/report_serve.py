"""The Serve part of the Markdown report (`gpudash.report`): each served engine on the host.

Its own module: the report's renderers are one per section and report.py is long already.
Every value here came from the host's state file: escaped with the report's `md()`, passed
in (an import of `gpudash.report` here would be a loop).
"""

from __future__ import annotations

from collections.abc import Callable

from gpudash.probe.sections.serve import Serve, brief, phase_words


def serve_lines(data: Serve, md: Callable[[object], str]) -> list[str]:
    """The Serve part's lines; `md` is the report's escaping of remote text."""
    if not data.looked:
        return ["Not looked for by this probe."]
    if not data.states:
        return ["No served engine on this host (`gpudash run serve HOST` launches one)."]
    lines: list[str] = []
    for s in data.states:
        port = f" on port {s.port}" if s.port is not None else ""
        tp = f", tp {s.tp}" if s.tp is not None else ""
        lines.append(
            f"- `{md(s.file)}`: {md(s.engine or '?')} serving {md(s.model or '?')}{port}{tp}:"
            f" **{md(brief(s, data.host_now))}**"
        )
        alive = {True: "alive", False: "gone", None: "not checked"}[s.alive]
        listening = {True: "listening", False: "closed", None: "not checked"}[s.listening]
        lines.append(f"  - pid {md(s.pid)} {alive}; port {listening}; log `{md(s.log)}`")
        r = s.ready
        if r is not None:
            jit = {True: "JIT-compiled at start", False: "no JIT at start", None: "JIT unknown"}
            lines.append(
                f"  - attention {md(r.attention_backend or 'not reported')}; FlashInfer"
                f" {jit[r.flashinfer_jit]}"
            )
            if r.phases_s:
                split = ", ".join(f"{md(phase_words(k))} {v:.1f} s" for k, v in r.phases_s)
                lines.append(f"  - phases: {split}")
        f = s.failure
        if f is not None:
            where = f" (log line {f.lineno})" if f.lineno is not None else ""
            lines.append(f"  - `{md(f.code)}`: {md(f.line or 'no line quoted')}{where}")
        lines += [f"  - note: {md(n)}" for n in s.notes]
    lines += [f"- note: {md(n)}" for n in data.notes]
    return lines
