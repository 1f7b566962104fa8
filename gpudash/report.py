"""`gpudash report HOST`: one host's triage report, in Markdown to paste into a ticket, or JSON.

    render_markdown(result, findings) -> str
    render_json(result, findings)     -> dict

Each registered section renders its own part (`report` in its module: a section cannot drop
out of the report); this module puts them under the verdict and the findings. Every string
that came from the host (GPU names, paths, tool messages) is untrusted: parsers removed
control characters, `md()` (gpudash.probe.markdown) cleans it again and escapes what Markdown
would act on, and the whole text is cleaned once more at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpudash.checks.finding import Finding, Severity, counts, worst_severity
from gpudash.checks.fixes import fix_phrase
from gpudash.model import HostResult, to_jsonable
from gpudash.probe.markdown import md
from gpudash.probe.registry import all_sections
from gpudash.text import clean

__all__ = ["md", "render_json", "render_markdown"]


def render_json(result: HostResult, findings: Sequence[Finding]) -> dict[str, object]:
    """The report as one JSON document."""
    return {
        "host": result.name,
        "state": result.state.value,
        "error": result.error,
        "worst": (worst_severity(findings) or Severity.OK).value,
        "counts": {k.value: v for k, v in counts(findings).items()},
        "findings": [f.to_json() for f in findings],
        "sections": {k: to_jsonable(v.data) for k, v in result.sections.items()},
    }


def render_markdown(result: HostResult, findings: Sequence[Finding]) -> str:
    lines = [f"# Triage report: {md(result.name)}", ""]
    n = counts(findings)
    worst = worst_severity(findings) or Severity.OK
    summary = ", ".join(f"{n[s]} {s.value}" for s in reversed(Severity) if n[s])
    state = result.state.value + (f" ({md(result.error)})" if result.error else "")
    lines += [
        f"Probe: {state}. Verdict: **{worst.value.upper()}** ({summary or 'no findings'}).",
        "",
    ]
    lines += _findings(findings)
    # Each registered section renders its own part (`report` in its module), in display order.
    for registered in all_sections():
        section = result.sections.get(registered.name)
        lines += [f"## {registered.title}", ""]
        if section is None:
            lines += ["Not probed.", ""]
            continue
        if section.error:
            lines += [f"Section error: {md(section.error)}", ""]
        if section.data is not None:
            lines += registered.report(section.data)
            lines.append("")
    # Last, over the whole text: whatever host or file text reached it by any path, no
    # control, bidi or zero-width character reaches the ticket or the terminal.
    return clean("\n".join(lines)).rstrip("\n") + "\n"


def _findings(findings: Sequence[Finding]) -> list[str]:
    lines = ["## Findings", ""]
    shown = [f for f in findings if f.severity is not Severity.OK]
    for f in shown:
        lines.append(f"- **{f.severity.value.upper()}** `{f.code}`: {md(f.title)}")
        if f.why:
            lines.append(f"  - Why: {md(f.why)}")
        if f.fix:
            task = fix_phrase(f.fix_task, f.fix_key, "markdown")
            lines.append(f"  - Fix: {md(f.fix)}{' ' + task if task else ''}")
        facts = _facts(f.facts)
        if facts:
            lines.append(f"  - Facts: {facts}")
    ok = [f for f in findings if f.severity is Severity.OK]
    if ok:
        lines.append("- Passed: " + "; ".join(f"`{f.code}` {md(f.title)}" for f in ok))
    if not findings:
        lines.append("No findings.")
    return [*lines, ""]


def _facts(facts: Mapping[str, object]) -> str:
    parts = []
    for key, value in dict(facts).items():
        if value in (None, [], {}, ""):
            continue
        if isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        parts.append(f"{md(key)} = {md(value)}")
    return "; ".join(parts)
