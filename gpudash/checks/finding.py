"""A finding: one verdict about a host, and the severity scale that orders them.

Its own module, below every check family and below `run_checks`, so that the report, the
CLI and the app can name a finding without importing the checks that make them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from gpudash.model import to_jsonable
from gpudash.text import clean_line

Fact: TypeAlias = "str | int | float | bool | Sequence[Fact] | Mapping[str, Fact] | None"
"""A value behind a verdict, as probed: JSON-shaped (what `Finding.to_json` writes)."""


class Severity(str, enum.Enum):
    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.OK: 0, Severity.INFO: 1, Severity.WARN: 2, Severity.FAIL: 3}


@dataclass(frozen=True)
class Finding:
    """One verdict about a host.

    `code` is short and stable (`driver.too_old_for_nvcc`): scripts and tests key on it.
    `facts` are the values behind the verdict, as probed (already cleaned of control
    characters by the parsers, but still remote text: escape it for Markdown or markup).
    `fix_task` names the bootstrap task that fixes it, `fix_key` the app key that runs that
    task (from the config's task table), `fix_params` the task parameters the fix needs
    (e.g. the model `repo`)."""

    severity: Severity
    code: str
    title: str
    why: str = ""
    fix: str = ""
    facts: Mapping[str, Fact] = field(default_factory=dict)
    fix_task: str | None = None
    fix_key: str | None = None
    fix_params: Mapping[str, str] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.code.split(".", 1)[0]

    def to_json(self) -> dict[str, object]:
        return {
            "severity": self.severity.value,
            "code": self.code,
            "title": self.title,
            "why": self.why,
            "fix": self.fix,
            "facts": to_jsonable(dict(self.facts)),
            "fix_task": self.fix_task,
            "fix_key": self.fix_key,
            "fix_params": dict(self.fix_params),
        }


def worst_severity(findings: Iterable[Finding]) -> Severity | None:
    """The worst severity among `findings`; None when there are none at all."""
    worst: Severity | None = None
    for finding in findings:
        if worst is None or finding.severity.rank > worst.rank:
            worst = finding.severity
    return worst


def counts(findings: Iterable[Finding]) -> dict[Severity, int]:
    """How many findings of each severity, every severity present as a key."""
    out = dict.fromkeys(Severity, 0)
    for finding in findings:
        out[finding.severity] += 1
    return out


def problems(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """The findings worth a user's attention: warn and fail (info and ok are context)."""
    return tuple(f for f in findings if f.severity.rank >= Severity.WARN.rank)


def sort_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Worst first; within a severity, in the order the checks produced them."""
    return tuple(sorted(findings, key=lambda f: -f.severity.rank))


def check_error(check: str, exc: BaseException) -> Finding:
    """What a check that raised leaves behind: one line naming it and the exception.

    A fail, not a silence: the check did not look, so nothing it covers can be called ok,
    and `gpudash check` must not exit 0 over a host it could not judge."""
    error = clean_line(f"{type(exc).__name__}: {exc}")[:300]  # may quote remote text
    return Finding(
        Severity.FAIL,
        "check.error",
        f"check {check} failed: {error}",
        why="A check raised instead of giving a verdict: what it covers is unknown.",
        fix="A bug in gpudash: report it with this host's `gpudash probe --json` output.",
        facts={"check": check, "error": error},
    )
