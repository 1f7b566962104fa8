"""A probe section is registered once: its name in the registry brings its parser, its summary
line, its panel and its data in the checks' Context, and a check that raises costs one
finding, never a traceback."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import sys
import types
from pathlib import Path

import pytest

from gpudash.checks import gpus as gpus_check
from gpudash.checks import run_checks
from gpudash.checks import wheels as wheels_check
from gpudash.checks.context import Context
from gpudash.checks.finding import Severity
from gpudash.config.load import parse_config
from gpudash.fleet import Fleet
from gpudash.model import FindingsComputed, SectionResult
from gpudash.probe.registry import SECTION_NAMES, section
from gpudash.report import render_markdown
from gpudash.summary import section_line
from tests.support import FIXTURES
from tests.support.hosts import host

SAVED = FIXTURES / "saved" / "dgx-h200"


@pytest.mark.parametrize("name", SECTION_NAMES)
def test_every_registered_section_has_a_parser_a_summary_line_and_a_panel(name: str) -> None:
    from gpudash.ui.panels import IN_HEADER, panel_for
    from gpudash.ui.widgets.host_view import PANELS

    sec = section(name)
    assert sec.name == name and sec.body.strip()
    empty = sec.parse({})  # a host that printed nothing for it
    assert dataclasses.is_dataclass(empty)
    line = sec.summary(empty)
    assert isinstance(line, str) and line and line != type(empty).__name__
    if name in IN_HEADER:
        assert all(name != p.SECTION for p in PANELS)
    else:
        panel = panel_for(name)
        assert name == panel.SECTION and panel in PANELS


@pytest.mark.parametrize("name", [n for n in SECTION_NAMES if n != "system"])
def test_every_panel_is_typed_with_what_its_sections_parse_returns(name: str) -> None:
    """`Panel[T]` is what mypy checks each `body` against: T must be the type the section's
    `parse` returns (and what it returns at run time), or the check proves nothing."""
    import typing

    from gpudash.ui.panels import panel_for

    module = importlib.import_module(f"gpudash.probe.sections.{name}")
    returned = typing.get_type_hints(module.parse)["return"]
    panel = panel_for(name)
    assert panel.DATA is returned, (panel.__name__, panel.DATA, returned)
    assert isinstance(section(name).parse({}), panel.DATA)


@pytest.mark.parametrize("name", SECTION_NAMES)
def test_every_registered_section_renders_its_own_part_of_the_report(name: str) -> None:
    sec = section(name)
    assert sec.title and all(isinstance(line, str) for line in sec.report(sec.parse({})))
    result = host("dgx-h200")
    text = render_markdown(result, ())
    part = "\n".join(sec.report(result.sections[name].data))
    assert f"## {sec.title}\n\n{part}\n" in text


def test_a_section_module_without_a_report_part_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    future = types.ModuleType("gpudash.probe.sections.future")
    system = importlib.import_module("gpudash.probe.sections.system")
    for attr in ("NAME", "TIMEOUT", "BODY", "parse", "summary", "TITLE"):
        setattr(future, attr, getattr(system, attr))
    monkeypatch.setitem(sys.modules, "gpudash.probe.sections.future", future)
    with pytest.raises(LookupError, match="section future: its module has no report"):
        section("future")


def test_the_host_view_shows_findings_then_each_section_in_registry_order() -> None:
    from gpudash.ui.panels import IN_HEADER
    from gpudash.ui.widgets.host_view import PANELS

    shown = [p.SECTION for p in PANELS]
    assert shown == ["findings", *(n for n in SECTION_NAMES if n not in IN_HEADER)]


def test_a_panel_missing_for_a_section_is_named_not_a_crash_on_screen() -> None:
    from gpudash.ui.panels import panel_for

    with pytest.raises(LookupError, match="future section: no panel module"):
        panel_for("future")


def test_the_summary_line_of_a_real_host_comes_from_each_sections_own_module() -> None:
    result = host("dgx-h200")
    lines = {name: section_line(result.sections[name]) for name in SECTION_NAMES}
    assert lines["gpus"].startswith("8× NVIDIA H200")
    assert "driver 580.159.04" in lines["gpus"]
    for name, line in lines.items():
        assert line == section(name).summary(result.sections[name].data)
        assert line != type(result.sections[name].data).__name__


def test_a_section_that_failed_says_so_in_its_summary_line() -> None:
    failed = SectionResult("gpus", None, "timed out after 15s", {}, 15.0, 124)
    assert section_line(failed) == "error: timed out after 15s"
    replayed = SectionResult("future", object(), None, {}, 0.1)  # a newer gpudash's capture
    assert section_line(replayed) == "object"


def test_context_holds_every_registered_section_by_name_and_typed() -> None:
    from gpudash.probe.sections.gpus import Gpus
    from gpudash.probe.sections.topology import Topology

    result = host("dgx-h200")
    ctx = Context.build(result)
    assert tuple(ctx.sections) == SECTION_NAMES
    for name in SECTION_NAMES:
        assert ctx.section(name) is result.sections[name].data
    assert ctx.gpus is ctx.section("gpus", Gpus) and isinstance(ctx.gpus, Gpus)
    assert ctx.section("gpus", Topology) is None  # not that section's type: no data
    assert ctx.section("future") is None  # not probed (or not a section at all)


def test_a_host_without_a_section_has_no_data_for_it_in_context() -> None:
    ctx = Context.build(host("dgx-h200", topology=None))
    assert "topology" not in ctx.sections and ctx.topology is None and ctx.any_data


def test_a_check_that_raises_leaves_one_error_finding_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = run_checks(host("dgx-h200"))

    def broken(ctx: Context) -> list:
        raise KeyError("line one\nline two")

    monkeypatch.setattr(gpus_check, "check", broken)
    found = run_checks(host("dgx-h200"))
    errors = [f for f in found if f.code == "check.error"]
    assert len(errors) == 1 and errors[0].severity is Severity.FAIL
    assert errors[0].title == "check gpus failed: KeyError: 'line one\\nline two'"
    assert errors[0].facts == {"check": "gpus", "error": "KeyError: 'line one\\nline two'"}
    others = {f.code for f in before if f.family != "gpus"}
    assert others and others <= {f.code for f in found}


def _replay_config(tmp_path: Path, names: list[str]) -> Path:
    config = tmp_path / "c.toml"
    config.write_text(
        "".join(
            f'[hosts.{n}]\ntransport = "replay"\nreplay_dir = "{SAVED}"\ntags = ["h200"]\n'
            for n in names
        )
    )
    return config


def test_a_check_that_raises_in_a_fleet_round_becomes_a_per_host_finding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through the real Fleet over saved probes: the round finishes, every host gets its
    findings, and the raising check is one `check.error` line among them."""

    def broken(ctx: Context) -> list:
        raise TypeError("unexpected keyword argument 'health'")

    monkeypatch.setattr(wheels_check, "check", broken)
    path = _replay_config(tmp_path, ["a", "b", "c"])
    config = parse_config(path.read_text(), str(path))

    async def run() -> tuple[list[FindingsComputed], Fleet]:
        async with Fleet(config) as fleet:
            events = [e async for e in fleet.probe()]
        return [e for e in events if isinstance(e, FindingsComputed)], fleet

    computed, fleet = asyncio.run(run())
    assert {e.host for e in computed} == {"a", "b", "c"}
    for name in ("a", "b", "c"):
        findings = fleet.results[name].findings
        errors = [f for f in findings if f.code == "check.error"]
        assert [f.title for f in errors] == [
            "check wheels failed: TypeError: unexpected keyword argument 'health'"
        ]
        assert any(f.family == "driver" for f in findings)  # the other checks ran


def test_gpudash_check_reports_a_raising_check_as_a_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpudash.cli.main import main

    def broken(ctx: Context) -> list:
        raise TypeError("unexpected keyword argument 'health'")

    monkeypatch.setattr(gpus_check, "check", broken)
    code = main(["--config", str(_replay_config(tmp_path, ["a"])), "check"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "check gpus failed: TypeError: unexpected keyword argument 'health'" in out
    assert "Traceback" not in out + err


def test_tag_groups_that_raise_cost_the_hosts_comparison_not_its_round(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gpudash.checks import groups

    def broken(result: object) -> dict:
        raise ValueError("bad trait")

    monkeypatch.setattr(groups, "traits", broken)
    path = _replay_config(tmp_path, ["a", "b"])
    config = parse_config(path.read_text(), str(path))

    async def run() -> Fleet:
        async with Fleet(config) as fleet:
            async for _ in fleet.probe():
                pass
        return fleet

    fleet = asyncio.run(run())
    for name in ("a", "b"):
        findings = fleet.results[name].findings
        assert "check compare failed: ValueError: bad trait" in [f.title for f in findings]
        assert any(f.family == "driver" for f in findings)
