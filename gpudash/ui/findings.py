"""The Findings panel: the host's verdict, worst first, and the keys that fix it.

Each warn/fail/info finding shows its severity, code and title, the facts behind it, why it
matters and the fix; `ok` findings fold into one line saying what was checked. While the
panel has focus, each fix key (a finding's `fix_key`, the fixing task's key) is live and
runs that task on this host through the same confirmation as the tasks screen, with the
finding's parameters (e.g. the model's repo). It shadows a host-view key of the same
letter only here, and the footer says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.binding import Binding

from gpudash.config_keys import key_name
from gpudash.model import HostResult, HostState
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import remote

SEVERITY = {
    "fail": ("✖ fail", "bold red"),
    "warn": ("▲ warn", "yellow"),
    "info": ("● info", "cyan"),
    "ok": ("✔ ok", "green"),
}


def _level(finding: Any) -> str:
    return str(getattr(finding.severity, "value", finding.severity))


def _fact(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_fact(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_fact(v) for v in value) or "none"
    return str(value)


def facts_text(facts: Mapping[str, Any]) -> Text:
    out = Text()
    for name, value in facts.items():
        if value is None or value == "":
            continue
        if out:
            out.append(" · ", style="dim")
        out.append(f"{name} ", style="dim")
        out.append(remote(_fact(value)))
    return out


def finding_text(finding: Any) -> Text:
    """Severity, code, title; then facts, why and fix on their own indented lines."""
    label, style = SEVERITY.get(_level(finding), (_level(finding), ""))
    out = Text.assemble((f"{label:<7}", style), (finding.code, "bold"), "  ", remote(finding.title))
    facts = facts_text(finding.facts)
    if facts:
        out.append("\n        facts ", style="dim")
        out.append_text(facts)
    if finding.why:
        out.append("\n        why   ", style="dim")
        out.append(remote(finding.why))
    if finding.fix or finding.fix_task:
        out.append("\n        fix   ", style="dim")
        out.append(remote(finding.fix))
        if finding.fix_key and finding.fix_task:
            out.append("  press ", style="dim")
            out.append(f" {finding.fix_key} ", style="bold reverse")
            out.append(f" to run task {finding.fix_task}", style="dim")
    return out


def findings_body(findings: Sequence[Any]) -> Text:
    problems = [f for f in findings if _level(f) != "ok"]
    fine = [f for f in findings if _level(f) == "ok"]
    parts = [finding_text(f) for f in problems]
    if fine:
        label, style = SEVERITY["ok"]
        line = Text(f"{label:<7}", style=style)
        line.append(", ".join(f.code.split(".", 1)[0] for f in fine), style="bold")
        line.append("  checked, nothing wrong", style="dim")
        parts.append(line)
    return Text("\n").join(parts)


def fix_targets(findings: Sequence[Any]) -> dict[str, int]:
    """Each fix key -> the index of the worst finding it fixes (findings come worst first)."""
    out: dict[str, int] = {}
    for index, finding in enumerate(findings):
        if finding.fix_key and finding.fix_task:
            out.setdefault(finding.fix_key, index)
    return out


class FindingsPanel(Panel):
    SECTION = "findings"
    TITLE = "Findings"
    DEFAULT_CSS = """
    FindingsPanel { max-height: 14; }
    Screen.-wide FindingsPanel { max-height: 20; }
    FindingsPanel.-maximized { max-height: 100%; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._findings: tuple[Any, ...] = ()
        self._fix_keys: list[str] = []

    def show(self, host: HostResult) -> None:
        if host.findings is self._findings and host.name == self._host:
            return
        self._host = host.name
        self._findings = tuple(host.findings)
        status = self.query_one(".panel-status")
        body = self.query_one(".panel-body")
        if not self._findings:
            status.display = True
            waiting = host.state in (HostState.CONNECTING, HostState.PROBING)
            words = "after the probe…" if waiting else "none yet: they come after a probe"
            status.update(Text(words, style="dim"))  # type: ignore[attr-defined]
            self.set_body_visible(False)
        else:
            status.display = False
            self.set_body_visible(True)
            body.update(findings_body(self._findings))  # type: ignore[attr-defined]
        self._bind_fixes()

    def _bind_fixes(self) -> None:
        bindings = self._bindings.key_to_bindings
        for key in self._fix_keys:
            bindings[key] = [b for b in bindings.get(key, []) if not b.action.startswith("fix(")]
            if not bindings[key]:
                del bindings[key]
        self._fix_keys = []
        for fix_key, index in fix_targets(self._findings).items():
            task = self._findings[index].fix_task
            key = key_name(fix_key)
            binding = Binding(
                key,
                f"fix({index})",
                f"Fix: {task}",
                tooltip=f"Run task {task} on this host (after a confirmation)",
                id=f"fix:{task}",
            )
            bindings.setdefault(key, []).insert(0, binding)
            self._fix_keys.append(key)
        if self.is_mounted:
            self.refresh_bindings()

    def action_fix(self, index: int) -> None:
        if not 0 <= index < len(self._findings) or self._host is None:
            return
        finding = self._findings[index]
        self.app.request_task(  # type: ignore[attr-defined]
            finding.fix_task, dict(finding.fix_params), hosts=[self._host]
        )
