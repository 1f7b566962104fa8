"""The Findings panel: the host's verdict, worst first, and the one key that fixes it.

Each warn/fail/info finding shows its severity, code and title, the facts behind it, why it
matters and the fix; `ok` findings fold into one line saying what was checked. While the
panel has focus, `F` (id `fix`, remappable) runs the fixing task on this host through the
same confirmation as the tasks screen, with the finding's parameters (e.g. the model's
repo); with several fixable findings it asks which first. One key, not each task's own:
a task's key (`s` serving) would shadow the host view's key of the same letter (`s` save)
whenever this panel has focus, so the same key meant two things by focus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.binding import BindingType
from textual.message import Message

from gpudash.config.model import Config
from gpudash.model import HostResult, HostState
from gpudash.ui import keys
from gpudash.ui.panels.base import Panel
from gpudash.ui.render import remote

FIX_KEY = keys.FINDINGS_KEYS[0].key
"""The findings panel's fix key (binding id `fix`)."""

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


NARROW = 60
"""Below this many cells of panel, a finding's line leads with its title and ends with its
code: cut at the right edge, the words a person reads survive and the code goes first."""


def _head(finding: Any, width: int = 7, narrow: bool = False) -> Text:
    label, style = SEVERITY.get(_level(finding), (_level(finding), ""))
    fix = (
        Text(f"[{FIX_KEY}: {finding.fix_task}]", style="bold reverse") if finding.fix_task else None
    )
    if narrow:
        out = Text.assemble((f"{label:<{width}}", style), remote(finding.title))
        if fix is not None:
            out.append(" ")
            out.append_text(fix)
        out.append(f"  {finding.code}", style="dim")
        return out
    out = Text.assemble((f"{label:<{width}}", style), (finding.code, "bold"))
    if fix is not None:
        out.append(" ")
        out.append_text(fix)
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
        if finding.fix_task:
            fix.append("  press ", style="dim")
            fix.append(f" {FIX_KEY} ", style="bold reverse")
            fix.append(f" to run task {finding.fix_task}", style="dim")
        table.add_row("fix", fix)
    return table


def _ok_line(fine: Sequence[Any]) -> Text:
    label, style = SEVERITY["ok"]
    line = Text(f"{label:<7}", style=style)
    line.append(", ".join(f.code.split(".", 1)[0] for f in fine), style="bold")
    line.append("  checked, nothing wrong", style="dim")
    return line


def findings_body(
    findings: Sequence[Any], detail: bool = False, narrow: bool = False
) -> RenderableType:
    """One line per finding (`[key]` when a task fixes it), or with `detail` each one's
    facts, why and fix under it; `ok` findings folded into one last line."""
    problems = [f for f in findings if _level(f) != "ok"]
    fine = [f for f in findings if _level(f) == "ok"]
    if not detail:
        lines = [_head(f, narrow=narrow) for f in problems] + ([_ok_line(fine)] if fine else [])
        out = Text("\n").join(lines)
        out.no_wrap = True
        out.overflow = "ellipsis"
        return out
    parts: list[RenderableType] = []
    for finding in problems:
        head = _head(finding, narrow=narrow)
        head.no_wrap, head.overflow = True, "ellipsis"
        parts.append(head)
        parts.append(Padding(finding_detail(finding), (0, 0, 0, 7)))
    if fine:
        parts.append(_ok_line(fine))
    return Group(*parts)


def fixable(findings: Sequence[Any]) -> list[int]:
    """The index of each finding a task fixes, worst first (as the findings come)."""
    return [i for i, f in enumerate(findings) if f.fix_task]


class FindingsPanel(Panel[object]):
    @dataclass
    class FixRequested(Message):
        """`F` on a fixable finding: its task, with the finding's parameters, on its host."""

        task: str
        params: Mapping[str, str]
        host: str

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

    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.FINDINGS_KEYS)

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._findings: tuple[Any, ...] = ()
        self._narrow = False  # as last drawn
        self.config: Config | None = None
        """The config (the hosts' expectations) the interim findings are checked against;
        the app sets it (attributes down)."""

    def show(self, host: HostResult) -> None:
        findings = tuple(host.findings)
        interim = not findings and host.state is HostState.PROBING and bool(host.sections)
        if host.findings is self._findings and host.name == self._host and not interim:
            return
        if interim:  # the round is not over: what the sections already in say
            from gpudash.ui.interim import interim_findings

            findings = interim_findings(host, self.config)
        self.border_subtitle = (
            f"so far: {host.done}/{host.sections_total} sections" if interim else ""
        )
        self._host = host.name
        had_fix = bool(fixable(self._findings))
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
        if had_fix != bool(fixable(self._findings)) and self.is_mounted:
            self.refresh_bindings()  # `F` shows in the footer only where there is a fix

    def _draw(self, focused: bool | None = None) -> None:
        """Details while the panel has focus (or is full screen); one line each otherwise."""
        if focused is None:
            focused = self.has_focus
        detail = focused or self.screen.maximized is self
        self.set_class(not detail, "-compact")
        if self._findings:
            self._narrow = self.narrow
            content = findings_body(self._findings, detail, self._narrow)
            self.draw(content)
            # One line per finding: the height is known, so it is set, not measured. A
            # measured height went stale now and then on a host switch (a layout that raced
            # the update kept the previous host's count, hiding the extra findings).
            self.text.styles.height = len(content.split()) if isinstance(content, Text) else "auto"

    @property
    def narrow(self) -> bool:
        width = self.scrollable_content_region.width
        return 0 < width < NARROW

    def on_resize(self) -> None:
        if self._findings and self.narrow != self._narrow:
            self._draw()

    def on_focus(self) -> None:
        self._draw(True)

    def on_blur(self) -> None:
        self._draw(False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "fix":
            return bool(fixable(self._findings))
        return True

    def action_fix(self) -> None:
        """One fixable finding: its task's confirmation; several: which one, first."""
        choices = fixable(self._findings)
        if not choices or self._host is None:
            return
        if len(choices) == 1:
            self._run_fix(self._findings[choices[0]])
            return
        from gpudash.ui.screens.fix_picker import FixPicker

        findings = self._findings

        def picked(index: int | None) -> None:
            if index is not None and findings is self._findings:
                self._run_fix(findings[index])

        self.app.push_screen(FixPicker([(i, findings[i]) for i in choices]), picked)

    def _run_fix(self, finding: Any) -> None:
        if self._host is not None:
            self.post_message(
                self.FixRequested(finding.fix_task, dict(finding.fix_params), self._host)
            )
