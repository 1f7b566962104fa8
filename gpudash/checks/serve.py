"""Serve findings: each served engine's state on the host, as a verdict with why and fix.

Read from the serve section (`gpudash.probe.sections.serve`): the state file the serve
supervisor keeps, and what the host said of its pid and port in the same round trip. A
failure the supervisor classified keeps its own code (`serve.oom`, `serve.nccl`, ...), its
why and fix, and the log line it was judged from (quoted in the facts); a state file that says
ready while its engine is gone is `serve.exited`, never ready. `serve.ready` is an ok finding
carrying the figures measured at readiness, so a report shows what was measured.
"""

from __future__ import annotations

from gpudash.checks.context import Context
from gpudash.checks.finding import Fact, Finding, Severity
from gpudash.probe.sections.serve import Serve, brief, phase_words
from gpudash.probe.serve import ServeState


def check(ctx: Context) -> list[Finding]:
    data = ctx.section("serve", Serve)
    if data is None or not data.looked:
        return []
    return check_states(data)


def check_states(data: Serve) -> list[Finding]:
    """The findings of every state file in the section (none: no engine served here)."""
    return [_finding(s, data.host_now) for s in data.states]


def _who(s: ServeState) -> str:
    bits = [s.engine or "engine ?", s.name or s.model or "model ?"]
    if s.port is not None:
        bits.append(f"on :{s.port}")
    return " ".join(bits)


def _facts(s: ServeState, *extra: tuple[str, Fact]) -> dict[str, Fact]:
    facts: dict[str, Fact] = {
        "task": s.file,
        "engine": s.engine,
        "model": s.model,
        "port": s.port,
        "tp": s.tp,
        "pid": s.pid,
        "state": s.state,
        "phase": s.phase,
        "pid_alive": s.alive,
        "port_listening": s.listening,
    }
    facts.update(extra)
    return {k: v for k, v in facts.items() if v is not None}


def _finding(s: ServeState, host_now: float | None) -> Finding:
    verdict = s.verdict
    who = _who(s)
    if verdict == "ready":
        return _ready(s, who)
    if verdict == "exited":
        return Finding(
            Severity.FAIL,
            "serve.exited",
            f"{s.file}: {who} exited after {s.state}: pid {s.pid} is gone",
            why=f"The state file says {s.state}, but its engine's process is no longer running:"
            " nothing serves on that port.",
            fix="Read the end of its log for the cause, then launch it again"
            f" (`gpudash run {s.file} HOST`).",
            facts=_facts(s, ("log", s.log)),
            fix_task=s.file,
        )
    if verdict in ("failed", "stalled"):
        return _failed(s, who, host_now)
    if verdict == "starting":
        return Finding(
            Severity.INFO,
            "serve.starting",
            f"{s.file}: {who} {brief(s, host_now)}",
            why="The engine is still launching; it is declared ready only after a streamed"
            " chat completion gave tokens.",
            facts=_facts(s),
        )
    if verdict == "stopped":
        return Finding(Severity.INFO, "serve.stopped", f"{s.file}: {who} stopped", facts=_facts(s))
    return Finding(
        Severity.WARN,
        "serve.unreadable",
        f"{s.file}: the serve state file could not be read",
        why="Nothing can be said of this engine: " + ("; ".join(s.notes) or "unknown state"),
        fix=f"Look at ~/.cache/gpudash/serve/{s.file}.json on the host, or launch it again.",
        facts=_facts(s, ("notes", list(s.notes))),
    )


def _ready(s: ServeState, who: str) -> Finding:
    r = s.ready
    if s.listening is False:
        return Finding(
            Severity.FAIL,
            "serve.not_listening",
            f"{s.file}: {who} says ready, but nothing listens on its port",
            why="Its process is alive but the port is closed: clients cannot reach it.",
            fix=f"Read its log; stop it (`gpudash stop {s.file} HOST`) and launch it again.",
            facts=_facts(s, ("log", s.log)),
        )
    figures: list[tuple[str, Fact]] = []
    if r is not None:
        figures = [
            ("time_to_ready_s", r.time_to_ready_s),
            ("ttft_ms", r.ttft_ms),
            ("decode_tok_s", r.decode_tok_s),
            ("attention_backend", r.attention_backend),
            ("flashinfer_jit", r.flashinfer_jit),
            ("phases_s", {phase_words(k): v for k, v in r.phases_s} or None),
        ]
    return Finding(
        Severity.OK,
        "serve.ready",
        f"{s.file}: {who} {brief(s, None)}",
        facts=_facts(s, *figures),
    )


def _failed(s: ServeState, who: str, host_now: float | None) -> Finding:
    f = s.failure
    code = f.code if f is not None and f.code.startswith("serve.") else None
    if s.state == "stalled":
        code = code or "serve.stalled"
        title = f"{s.file}: {who} {brief(s, host_now)}"
    else:
        code = code or "serve.exited"
        title = f"{s.file}: {who} failed ({code})"
        if s.phase:
            title += f" in {phase_words(s.phase)}"
    line: list[tuple[str, Fact]] = []
    if f is not None:
        line = [("line", f.line), ("lineno", f.lineno), ("source", f.source)]
    why = f.why if f is not None and f.why else "The engine did not become ready."
    if f is not None and f.line:
        why += f' Judged from its log: "{f.line}"'
    fix = f.fix if f is not None and f.fix else "Read its log for the first error."
    return Finding(
        Severity.FAIL, code, title, why=why, fix=fix, facts=_facts(s, *line, ("log", s.log))
    )
