"""What every check reads: one host's parsed sections, its config, and its peers.

The sections are a mapping from the registry's names to their parsed data, filled from the
host's result whatever sections there are: a new section reaches its checks through
`ctx.section(name, Type)` with no change here. The named properties are typed shortcuts for
the sections the existing checks read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, cast, overload

from gpudash.model import NOT_SAVED, HostResult, SectionResult
from gpudash.probe.registry import SECTION_NAMES
from gpudash.versions import Version, parse_version

if TYPE_CHECKING:
    from gpudash.checks.finding import Finding
    from gpudash.checks.groups import Groups
    from gpudash.config.expect import Expect
    from gpudash.config.model import HostConfig
    from gpudash.probe.sections.env import Env, Venv
    from gpudash.probe.sections.gpus import Gpu, Gpus
    from gpudash.probe.sections.models import Models
    from gpudash.probe.sections.network import Network
    from gpudash.probe.sections.system import System
    from gpudash.probe.sections.toolkit import Toolkit
    from gpudash.probe.sections.topology import Topology

D = TypeVar("D")


@dataclass(frozen=True)
class Context:
    result: HostResult
    host: HostConfig | None
    peers: tuple[tuple[HostConfig, HostResult], ...]
    sections: Mapping[str, object] = field(default_factory=dict)
    """Each registered section's parsed data, by name; absent when it has none."""
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
        data = {n: d for n in SECTION_NAMES if (d := result.data(n)) is not None}
        return cls(result, host, tuple(peers), data, groups)

    @overload
    def section(self, name: str) -> object | None: ...
    @overload
    def section(self, name: str, kind: type[D]) -> D | None: ...
    def section(self, name: str, kind: type[D] | None = None) -> object | None:
        """The named section's data, None when it has none; with `kind`, also None when the
        data is not of that type (a replayed capture from another gpudash version)."""
        data = self.sections.get(name)
        if kind is not None and not isinstance(data, kind):
            return None
        return data

    # Typed shortcuts: `cast`, not `section(name, Type)`, so that reading a section does not
    # import its module here (the probe imported it already to parse it).
    @property
    def system(self) -> System | None:
        return cast("System | None", self.sections.get("system"))

    @property
    def gpus(self) -> Gpus | None:
        return cast("Gpus | None", self.sections.get("gpus"))

    @property
    def topology(self) -> Topology | None:
        return cast("Topology | None", self.sections.get("topology"))

    @property
    def toolkit(self) -> Toolkit | None:
        return cast("Toolkit | None", self.sections.get("toolkit"))

    @property
    def env(self) -> Env | None:
        return cast("Env | None", self.sections.get("env"))

    @property
    def models(self) -> Models | None:
        return cast("Models | None", self.sections.get("models"))

    @property
    def network(self) -> Network | None:
        return cast("Network | None", self.sections.get("network"))

    @property
    def any_data(self) -> bool:
        return bool(self.sections)

    @property
    def expect(self) -> Expect | None:
        return self.host.expect if self.host is not None else None

    @property
    def gpu_list(self) -> tuple[Gpu, ...]:
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
    def venvs(self) -> tuple[Venv, ...]:
        return tuple(self.env.venvs) if self.env is not None else ()

    def section_notes(self) -> list[Finding]:
        """An info finding per section that did not arrive or failed: its checks are skipped.
        A GPU tool that never returned is a warning of its own instead (`hung_tool`)."""
        from gpudash.checks.finding import Finding, Severity

        out = []
        for name in SECTION_NAMES:
            section = self.result.sections.get(name)
            if section is None and not self.result.sections:
                continue  # nothing probed yet
            if section is not None and section.error == NOT_SAVED:
                continue  # a replay of a capture older than the section: its panel says so
            hung = hung_tool(section) if section is not None else None
            if hung is not None:
                out.append(hung)
            elif section is None or section.data is None or section.error:
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


def hung_tool(section: SectionResult) -> Finding | None:
    """A WARN when the section timed out inside a GPU tool (its part began and never ended):
    nvidia-smi that does not return is a wedged driver or GPU far more often than a slow
    one, and must never read as "no GPUs"."""
    from gpudash.checks.finding import Finding, Severity
    from gpudash.probe.registry import section as registered

    error = section.error or ""
    if not error.startswith("timed out") or section.name not in SECTION_NAMES:
        return None
    # The GPU tool each part runs is the section's own knowledge (its GPU_TOOLS).
    for part_name, tool in registered(section.name).tools.items():
        part = section.parts.get(part_name)
        if part is None or part.rc is not None:
            continue
        seconds = _seconds(error) or round(section.elapsed_s or 0)
        return Finding(
            Severity.WARN,
            "gpu.tool_hung",
            f"{tool} hung for {seconds:g} s: a driver or GPU fault is likely",
            why=(
                "nvidia-smi blocks while the driver waits on a GPU that stopped answering "
                "(an Xid, a fallen-off-the-bus GPU, a stuck fabric manager); what it would "
                "have reported is unknown, not absent."
            ),
            fix="Check `dmesg | grep -i xid` and `nvidia-smi` by hand; reset the GPU or reboot "
            "if it stays hung.",
            facts={"section": section.name, "command": tool, "seconds": seconds},
        )
    return None


def _seconds(error: str) -> float | None:
    """15.0 from "timed out after 15s" (`parse_section`'s words)."""
    import re

    m = re.search(r"after ([\d.]+)\s*s", error)
    return float(m.group(1)) if m else None
