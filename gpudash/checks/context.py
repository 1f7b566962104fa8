"""What every check reads: one host's parsed sections, its config, and its peers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudash.checks.versions import Version, parse_version
from gpudash.model import HostResult
from gpudash.probe.registry import SECTION_NAMES

if TYPE_CHECKING:
    from gpudash.checks import Finding
    from gpudash.checks.compare import Groups
    from gpudash.checks.expect import Expect
    from gpudash.config.model import HostConfig


@dataclass(frozen=True)
class Context:
    result: HostResult
    host: HostConfig | None
    peers: tuple[tuple[HostConfig, HostResult], ...]
    system: Any = None
    gpus: Any = None
    topology: Any = None
    toolkit: Any = None
    env: Any = None
    models: Any = None
    network: Any = None
    groups: Groups | None = None
    """Tag-group majorities shared by every host of a fleet check (else built from peers)."""

    @classmethod
    def build(
        cls,
        result: HostResult,
        host: HostConfig | None = None,
        peers: Sequence[tuple[HostConfig, HostResult]] = (),
        groups: Groups | None = None,
    ) -> Context:
        data = {n: result.data(n) for n in SECTION_NAMES}
        return cls(result, host, tuple(peers), groups=groups, **data)

    @property
    def any_data(self) -> bool:
        return any(getattr(self, n) is not None for n in SECTION_NAMES)

    @property
    def expect(self) -> Expect | None:
        return getattr(self.host, "expect", None) if self.host is not None else None

    @property
    def gpu_list(self) -> tuple[Any, ...]:
        return tuple(self.gpus.gpus) if self.gpus is not None else ()

    @property
    def driver_version(self) -> str | None:
        """The driver as nvidia-smi reports it, else the kernel module's version."""
        if self.gpus is not None and self.gpus.driver_version:
            return self.gpus.driver_version
        return self.toolkit.driver_version if self.toolkit is not None else None

    @property
    def driver(self) -> Version | None:
        return parse_version(self.driver_version)

    @property
    def reported_cuda(self) -> str | None:
        return self.gpus.cuda_version if self.gpus is not None else None

    @property
    def venvs(self) -> tuple[Any, ...]:
        return tuple(self.env.venvs) if self.env is not None else ()

    def section_notes(self) -> list[Finding]:
        """An info finding per section that did not arrive or failed: its checks are skipped."""
        from gpudash.checks import Finding, Severity

        out = []
        for name in SECTION_NAMES:
            section = self.result.sections.get(name)
            if section is None and not self.result.sections:
                continue  # nothing probed yet
            if section is None or section.data is None or section.error:
                why = (section.error if section else None) or "not probed"
                out.append(
                    Finding(
                        Severity.INFO,
                        "probe.section_missing",
                        f"{name} section: {why}",
                        why=f"Checks that need the {name} section were skipped or are partial.",
                        fix="Re-probe; if it keeps failing, raise section_timeout for this host.",
                        facts={"section": name, "error": why},
                    )
                )
        return out
