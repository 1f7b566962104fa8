"""A GPU tool cut off by its section's timeout: a WARN naming it, never "no GPUs"; and the
topology section's own timeout is the documented `section_timeout` default."""

from __future__ import annotations

from gpudash.checks.context import hung_tool
from gpudash.config.model import HostConfig
from gpudash.model import SectionResult
from gpudash.probe.parts import Part
from gpudash.probe.sections import topology


def test_the_topology_timeout_is_the_documented_section_timeout_default() -> None:
    assert HostConfig(name="x").section_timeout == topology.TIMEOUT


def test_a_topo_that_never_ended_is_not_read_as_no_gpus() -> None:
    data = topology.parse({"topo": Part("topo", None, "")})
    assert data.missing == "nvidia-smi topo -m did not finish"
    assert "no GPUs" not in data.summary and "no GPUs" not in data.brief


def test_a_timed_out_section_inside_a_gpu_tool_is_a_warning_naming_it() -> None:
    parts = {"topo": Part("topo", None, "")}
    section = SectionResult("topology", None, "timed out after 15s", parts, 15.2, 124)
    finding = hung_tool(section)
    assert finding is not None and finding.severity.value == "warn"
    assert finding.title == "nvidia-smi topo -m hung for 15 s: a driver or GPU fault is likely"
    done = {"topo": Part("topo", 0, "")}
    assert hung_tool(SectionResult("topology", None, "timed out after 15s", done, 15, 124)) is None
    assert hung_tool(SectionResult("topology", None, None, parts, 1.0, 0)) is None
