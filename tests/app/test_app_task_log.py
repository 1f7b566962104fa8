"""The task log follows like `tail -f` (issue 33, item 1): it stays at the bottom while the
run goes on, whatever else the screen does (another chain adding rows to the Runs table
shrinks the pane), until the user scrolls up; the pane's title says which ("following" /
"paused: End to follow"). Driven by Pilot against the real core over the test sshd."""

from __future__ import annotations

from gpudash.config.model import Config
from gpudash.tasks.spec import load_tasks
from gpudash.ui import create_app
from gpudash.ui.screens.confirm import ConfirmTask
from gpudash.ui.screens.tasks import TasksScreen
from gpudash.ui.widgets.log_pane import LogPane
from tests.app.test_app import until
from tests.app.test_app_tasks import NET, open_tasks_and_run, run_of, state_is
from tests.support.sshd import FakeHost, Sshd

TICKS = "i=0; while [ $i -lt 3000 ]; do echo tick $i; i=$((i + 1)); sleep 0.02; done\n"

TASKS = {
    "ticker": {"title": "a long run", "kind": "script", "key": "1", "run": TICKS},
    "one": {"title": "first", "kind": "script", "run": "echo 1\n"},
    "two": {"title": "second", "kind": "script", "needs": ["one"], "run": "echo 2\n"},
    "three": {"title": "third", "kind": "script", "needs": ["two"], "run": "echo 3\n"},
    "four": {
        "title": "fourth",
        "kind": "script",
        "key": "2",
        "needs": ["three"],
        "run": "echo 4\n",
    },
}


def last_tick(pane: LogPane) -> int:
    ticks = [line for line in pane.text_lines if line.startswith("tick ")]
    return int(ticks[-1].split()[1]) if ticks else -1


def bottom_row(pane: LogPane) -> str:
    """The last log row the pane draws (what the user sees at its bottom)."""
    height = pane.scrollable_content_region.height
    strips = [pane.render_line(y).text.strip() for y in range(height)]
    return [s for s in strips if s][-1]


async def test_the_log_keeps_following_while_another_chain_adds_rows_and_pauses_on_scroll_up(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    host = sshd.host_config(fake_host, network_targets=NET)
    app = create_app(Config(None, (host,), tasks=load_tasks(TASKS)))
    async with app.run_test(size=(200, 50)) as pilot:
        await open_tasks_and_run(pilot, "1")
        pane = app.screen.query_one(LogPane)
        await until(pilot, lambda: last_tick(pane) > 60, timeout=30)
        assert "following" in str(pane.border_title)
        # Another chain: four rows join the Runs table and the log pane gets shorter.
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await until(pilot, lambda: state_is(app, "h0", "four", "ok"), timeout=30)
        assert app.screen.query_one(LogPane) is pane
        assert app.screen.selected_run is run_of(app, "h0", "ticker")
        seen = last_tick(pane)
        await until(pilot, lambda: last_tick(pane) > seen + 40, timeout=30)
        await pilot.pause(0.1)
        # The pane still shows the newest line, and says it follows.
        assert pane.is_vertical_scroll_end
        assert bottom_row(pane) == f"tick {last_tick(pane)}"
        assert "following" in str(pane.border_title)
        # Scrolling up pauses it: new lines arrive, the view stays where the user put it.
        pane.focus()
        await pilot.press("pageup")
        await until(pilot, lambda: "paused: End to follow" in str(pane.border_title))
        held = pane.scroll_y
        seen = last_tick(pane)
        await until(pilot, lambda: last_tick(pane) > seen + 20, timeout=30)
        assert pane.scroll_y == held and not pane.is_vertical_scroll_end
        # End follows again.
        await pilot.press("end")
        await until(pilot, lambda: "following" in str(pane.border_title))
        seen = last_tick(pane)
        await until(pilot, lambda: last_tick(pane) > seen + 20, timeout=30)
        await pilot.pause(0.1)
        assert pane.is_vertical_scroll_end
        assert bottom_row(pane) == f"tick {last_tick(pane)}"
        app.tasks.cancel("h0", "ticker")
        await until(pilot, state_is(app, "h0", "ticker", "cancelled", "ok"), timeout=30)
