"""The types every layer speaks: section results, host snapshots and the events between them.

Snapshots are frozen and replaced on every event (`apply`), never mutated by workers and read
by panels at the same time.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, overload

from gpudash.probe.parts import Part

if TYPE_CHECKING:  # a name only: a probe that shows no findings imports no check
    from gpudash.checks.finding import Finding

NOT_SAVED = "not in this saved probe (saved before gpudash probed it)"
"""A replayed section the saved probe does not hold: said on the section, not a finding."""

D = TypeVar("D")


class HostState(str, enum.Enum):
    PENDING = "pending"
    CONNECTING = "connecting"
    PROBING = "probing"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True)
class SectionResult:
    """One parsed section. `error` is set when the section itself failed (timed out, cut off);
    a missing tool is not an error but part of `data`."""

    name: str
    data: object
    error: str | None
    parts: Mapping[str, Part]
    elapsed_s: float
    rc: int | None = 0

    def to_json(self) -> dict[str, object]:
        return {
            "error": self.error,
            "elapsed_s": round(self.elapsed_s, 3),
            "data": to_jsonable(self.data),
        }


@dataclass(frozen=True)
class HostResult:
    """Everything known about one host at one moment."""

    name: str
    state: HostState = HostState.PENDING
    error: str | None = None
    sections: Mapping[str, SectionResult] = field(default_factory=dict)
    sections_total: int = 0
    elapsed_s: float | None = None
    findings: tuple[Finding, ...] = ()  # worst first, after each round
    notes: tuple[str, ...] = ()
    """What the probe round says about how it ran (e.g. no `timeout` on the host's PATH)."""

    @property
    def done(self) -> int:
        return len(self.sections)

    @overload
    def data(self, section: str) -> object: ...
    @overload
    def data(self, section: str, kind: type[D]) -> D | None: ...
    def data(self, section: str, kind: type[D] | None = None) -> object:
        """The named section's parsed data, None when it has none; with `kind`, also None
        when the data is not of that type (a replay saved by another gpudash version), so
        the caller reads typed attributes, not `Any`."""
        result = self.sections.get(section)
        data = result.data if result else None
        if kind is not None and not isinstance(data, kind):
            return None
        return data

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "state": self.state.value,
            "error": self.error,
            "elapsed_s": None if self.elapsed_s is None else round(self.elapsed_s, 3),
            "sections": {k: v.to_json() for k, v in self.sections.items()},
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class HostStateChanged:
    host: str
    state: HostState
    reason: str | None = None
    sections_total: int = 0
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SectionDone:
    host: str
    result: SectionResult


@dataclass(frozen=True)
class ProbeFinished:
    """The last event of one host's probe round; `elapsed_s` covers connect + probe."""

    host: str
    elapsed_s: float


@dataclass(frozen=True)
class FindingsComputed:
    """A host's findings after a probe round (replacing any earlier ones); a peer's round
    can recompute them too, since hosts sharing a tag are compared."""

    host: str
    findings: tuple[Finding, ...]


Event = HostStateChanged | SectionDone | ProbeFinished | FindingsComputed


def apply(snapshot: HostResult, event: Event) -> HostResult:
    """The next snapshot after `event`: the one reducer both the CLI and the app use."""
    if isinstance(event, HostStateChanged):
        if event.state is HostState.CONNECTING:
            return HostResult(
                snapshot.name,
                event.state,
                None,
                snapshot.sections,
                event.sections_total or snapshot.sections_total,
            )
        return dataclasses.replace(
            snapshot,
            state=event.state,
            error=event.reason,
            sections_total=event.sections_total or snapshot.sections_total,
            notes=event.notes or snapshot.notes,
        )
    if isinstance(event, SectionDone):
        sections = dict(snapshot.sections)
        sections[event.result.name] = event.result
        return dataclasses.replace(snapshot, sections=sections)
    if isinstance(event, FindingsComputed):
        return dataclasses.replace(snapshot, findings=tuple(event.findings))
    return dataclasses.replace(snapshot, elapsed_s=event.elapsed_s)


def to_jsonable(value: object) -> object:
    """Dataclasses, enums, tuples and mappings as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_json"):
            return value.to_json()
        return {
            f.name: to_jsonable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value
