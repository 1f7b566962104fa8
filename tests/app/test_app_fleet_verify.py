"""The fleet view's verify column (issue 18 item 3): the last verify result per host in a
word, its verdict the checks' own (the host's findings), over the real H200 result
(tests/fixtures/verify/h200-1x.json) and the real no-torch one; shown where the screen has room.
"""

from __future__ import annotations

from dataclasses import replace

from gpudash.checks.verify import Now, judge
from gpudash.model import HostResult, SectionResult
from gpudash.probe.sections.verify import VerifySection
from gpudash.probe.verify import parse_verify
from gpudash.ui import create_app
from gpudash.ui.widgets.fleet_columns import COLUMNS, cell
from tests.app.test_app import FIVE, SIZE, replay_config, until
from tests.app.test_app_fleet_table import open_fleet, screen_lines
from tests.support import FIXTURES

VERIFY = next(c for c in COLUMNS if c.key == "verify")
REAL = parse_verify((FIXTURES / "verify" / "h200-1x.json").read_text())
NO_TORCH = parse_verify((FIXTURES / "verify" / "h200-notorch.json").read_text())


def host(section: VerifySection | None, now: Now | None = None, name: str = "h") -> HostResult:
    """A host whose verify section is `section`, with the findings the checks give for it."""
    if section is None:
        return HostResult(name)
    findings = tuple(judge(section.result, now)) if section.looked else ()
    result = SectionResult("verify", section, None, {}, 0.0)
    return HostResult(name, sections={"verify": result}, findings=findings)


def test_the_real_h200_result_reads_ok_with_its_bf16_tflops() -> None:
    assert VERIFY.value(host(VerifySection(REAL, REAL.finished))) == "ok 671T"


def test_a_driver_changed_since_reads_stale_and_no_torch_reads_fail() -> None:
    moved = Now(driver="590.44.01")  # the H200 verified on 580.159.04
    stale = host(VerifySection(REAL, REAL.finished), moved)
    assert VERIFY.value(stale) == "stale"
    assert "yellow" in str(cell(stale, VERIFY, None).style)
    failed = host(VerifySection(NO_TORCH, NO_TORCH.finished))
    assert VERIFY.value(failed) == "FAIL"
    assert "red" in str(cell(failed, VERIFY, None).style)


def test_never_run_is_said_and_not_looked_for_is_unknown() -> None:
    assert VERIFY.value(host(VerifySection(None, 1.0))) == "not run"
    assert VERIFY.value(host(VerifySection(None, 1.0, looked=False))) is None  # old capture
    assert VERIFY.value(host(None)) is None  # not arrived
    assert cell(host(None), VERIFY, None).plain == "–"


async def test_a_wide_fleet_view_shows_the_column_and_100_columns_keep_the_ten() -> None:
    app = create_app(replay_config(*FIVE))
    async with app.run_test(size=(220, 40)) as pilot:
        fleet, _ = await open_fleet(app, pilot)
        snap = app.results["h200-1x"]
        verify = SectionResult("verify", VerifySection(REAL, REAL.finished), None, {}, 0.0)
        app.results["h200-1x"] = replace(
            snap,
            sections={**snap.sections, "verify": verify},
            findings=(*snap.findings, *judge(REAL, Now())),
        )
        app.show_hosts({"h200-1x"})
        row = 2 + fleet.rows.index("h200-1x")
        await until(pilot, lambda: "ok 671T" in screen_lines(app)[row])
        assert "verify" in screen_lines(app)[1].split()
        await pilot.resize_terminal(*SIZE)
        await until(pilot, lambda: "verify" not in screen_lines(app)[1].split())
        assert "ok 671T" not in "\n".join(screen_lines(app))
