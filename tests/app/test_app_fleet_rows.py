"""The fleet view's values are kept by the app as probe events arrive (what lets the view
open on 1000 hosts within its budget: python -m bench.bench_scale `app`). Kept values must always
equal values computed afresh."""

from __future__ import annotations

import dataclasses
from collections import Counter

from gpudash.config.model import Config, HostConfig
from gpudash.model import FindingsComputed, HostResult, HostState, SectionDone
from gpudash.ui import create_app
from gpudash.ui.app import GpudashApp
from gpudash.ui.host_state import state_text, state_words
from gpudash.ui.messages import ProbeEvent
from gpudash.ui.screens.fleet import FleetScreen
from gpudash.ui.widgets.fleet_columns import COLUMNS
from gpudash.ui.widgets.fleet_rows import FleetRows
from tests.app.test_app import FIVE, SAVED, SIZE, settled, until


def five() -> Config:
    return Config(
        None, tuple(HostConfig(name=n, transport="replay", replay_dir=str(SAVED / n)) for n in FIVE)
    )


def assert_kept_values_are_fresh(app: GpudashApp) -> None:
    rows = FleetRows.of(app)
    for name, result in app.results.items():
        assert rows.values[name] == tuple(c.value(result) for c in COLUMNS), name
    for i, column in enumerate(COLUMNS):
        if column.compare:
            values = (column.value(r) for r in app.results.values())
            assert rows.counts[i] == Counter(v for v in values if v is not None), column.key


async def test_values_kept_as_events_arrive_equal_values_computed_afresh() -> None:
    app = create_app(five())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        assert_kept_values_are_fresh(app)

        one_gpu = app.results["h200-1x"].sections["gpus"]
        app.post_message(ProbeEvent(SectionDone("dgx-h200", one_gpu)))
        app.post_message(ProbeEvent(FindingsComputed("pcie-a40", ())))
        await until(pilot, lambda: not app.results["pcie-a40"].findings)
        assert FleetRows.of(app).values["dgx-h200"][2] == "1× H200"
        assert FleetRows.of(app).values["pcie-a40"][1].startswith("ready")
        assert "fail" not in FleetRows.of(app).values["pcie-a40"][1]  # its findings went
        assert_kept_values_are_fresh(app)

        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen) and app.screen.rows)
        fleet = app.screen
        assert isinstance(fleet, FleetScreen)
        assert str(fleet.cell("dgx-h200", "gpus")) == "1× H200"
        assert "reverse" not in str(fleet.cell("dgx-h200", "gpus").style)


async def test_the_state_column_reads_as_the_state_shown_in_the_sidebar() -> None:
    app = create_app(five())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        ready = app.results["pcie-a40"]
        failed_section = dataclasses.replace(ready.sections["gpus"], error="timed out after 20 s")
        variants: list[HostResult] = [
            *app.results.values(),  # ready with findings, no GPU, unreachable
            HostResult("new"),
            dataclasses.replace(ready, state=HostState.CONNECTING),
            dataclasses.replace(ready, state=HostState.PROBING, sections_total=0),
            dataclasses.replace(ready, sections={**ready.sections, "gpus": failed_section}),
            dataclasses.replace(ready, findings=()),
            dataclasses.replace(ready, state=HostState.FAILED, error="pcie-a40: lost\x1b[2J"),
            dataclasses.replace(ready, state=HostState.FAILED, error=None),
            HostResult("gone", HostState.FAILED, error="gone: "),
        ]
        for result in variants:
            assert state_words(result) == state_text(result).plain, result.name
