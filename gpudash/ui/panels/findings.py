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

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.binding import Binding

from gpudash.config.keys import key_name
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


def _head(finding: Any, width: int = 7) -> Text:
    label, style = SEVERITY.get(_level(finding), (_level(finding), ""))
    out = Text.assemble((f"{label:<{width}}", style), (finding.code, "bold"))
    if finding.fix_key and finding.fix_task:
        out.append(" ")
        out.append(f"[{finding.fix_key}]", style="bold reverse")
    out.append("  ")
    out.append(remote(finding.title))
    return out


def finding_detail(finding: Any) -> Table:
    """Code and title, then facts, why and fix, each wrapped under its own label."""
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, style="dim")
    table.add_column(ratio=1)
    facts = facts_text(finding.facts)
    if facts:
        table.add_row("facts", facts)
    if finding.why:
        table.add_row("why", remote(finding.why))
    if finding.fix or finding.fix_task:
        fix = remote(finding.fix)
        if finding.fix_key and finding.fix_task:
            fix.append("  press ", style="dim")
            fix.append(f" {finding.fix_key} ", style="bold reverse")
            fix.append(f" to run task {finding.fix_task}", style="dim")
        table.add_row("fix", fix)
    return table


def _ok_line(fine: Sequence[Any]) -> Text:
    label, style = SEVERITY["ok"]
    line = Text(f"{label:<7}", style=style)
    line.append(", ".join(f.code.split(".", 1)[0] for f in fine), style="bold")
    line.append("  checked, nothing wrong", style="dim")
    return line


def findings_body(findings: Sequence[Any], detail: bool = False) -> RenderableType:
    """One line per finding (`[key]` when a task fixes it), or with `detail` each one's
    facts, why and fix under it; `ok` findings folded into one last line."""
    problems = [f for f in findings if _level(f) != "ok"]
    fine = [f for f in findings if _level(f) == "ok"]
    if not detail:
        lines = [_head(f) for f in problems] + ([_ok_line(fine)] if fine else [])
        out = Text("\n").join(lines)
        out.no_wrap = True
        out.overflow = "ellipsis"
        return out
    parts: list[RenderableType] = []
    for finding in problems:
        head = _head(finding)
        head.no_wrap, head.overflow = True, "ellipsis"
        parts.append(head)
        parts.append(Padding(finding_detail(finding), (0, 0, 0, 7)))
    if fine:
        parts.append(_ok_line(fine))
    return Group(*parts)


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
    FindingsPanel { max-height: 9; }
    Screen.-narrow FindingsPanel { max-height: 7; }
    FindingsPanel:focus { max-height: 16; }
    Screen.-wide FindingsPanel, Screen.-wide FindingsPanel:focus { max-height: 22; }
    FindingsPanel.-maximized { max-height: 100%; }
    FindingsPanel.-compact .panel-text { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._findings: tuple[Any, ...] = ()
        self._fix_keys: list[str] = []
        self._bound: list[tuple[str, int, str]] = []  # (key, finding index, task) bound now

    def show(self, host: HostResult) -> None:
        if host.findings is self._findings and host.name == self._host:
            return
        findings = tuple(host.findings)
        self._host = host.name
        if findings and findings == self._findings:
            self._findings = findings  # another host with the same verdict: drawn already
            return
        self._findings = findings
        if not self._findings:
            waiting = host.state in (HostState.CONNECTING, HostState.PROBING)
            self.text.styles.height = "auto"
            self.status("after the probe…" if waiting else "none yet: they come after a probe")
        else:
            self._draw()
        self._bind_fixes()

    def _draw(self, focused: bool | None = None) -> None:
        """Details while the panel has focus (or is full screen); one line each otherwise."""
        if focused is None:
            focused = self.has_focus
        detail = focused or self.screen.maximized is self
        self.set_class(not detail, "-compact")
        if self._findings:
            content = findings_body(self._findings, detail)
            self.draw(content)
            # One line per finding: the height is known, so it is set, not measured. A
            # measured height went stale now and then on a host switch (a layout that raced
            # the update kept the previous host's count, hiding the extra findings).
            self.text.styles.height = len(content.split()) if isinstance(content, Text) else "auto"

    def on_focus(self) -> None:
        self._draw(True)

    def on_blur(self) -> None:
        self._draw(False)

    def _bind_fixes(self) -> None:
        """Bind each fix key; untouched when the keys are the ones bound already (refreshing
        the bindings makes every footer collect its screen's keys again)."""
        targets = fix_targets(self._findings)
        wanted = [(key_name(k), i, self._findings[i].fix_task) for k, i in targets.items()]
        if wanted == self._bound:
            return
        self._bound = wanted
        bindings = self._bindings.key_to_bindings
        for key in self._fix_keys:
            bindings[key] = [b for b in bindings.get(key, []) if not b.action.startswith("fix(")]
            if not bindings[key]:
                del bindings[key]
        self._fix_keys = []
        for key, index, task in wanted:
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
