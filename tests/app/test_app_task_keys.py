"""Task keys pressed in the host view (issue 33, item 4): the Verify panel said "press V" and
V there did nothing and said nothing. Task keys live on the tasks screen (every key means one
thing on a screen: test_app_tasks.py), so in the host view a task key that is no key there
says where it is; a host-view key keeps its meaning (`s` saves; serving's `s` is on the tasks
screen). Replayed captures: nothing runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudash.ui import create_app
from gpudash.ui.screens.main import MainScreen
from gpudash.ui.screens.tasks import TasksScreen
from tests.app.test_app import SIZE, replay_config, settled, until


def notes(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.message for n in app._notifications]


async def test_v_in_the_host_view_says_where_verify_runs_and_that_place_asks_for_it() -> None:
    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("V")
        await until(pilot, lambda: notes(app))
        assert notes(app) == ["V runs verify on the tasks screen: press b, then V"]
        assert isinstance(app.screen, MainScreen) and app.tasks.runs == {}
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await pilot.press("V")
        from gpudash.ui.screens.confirm import ConfirmTask

        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        await pilot.press("n")


async def test_a_host_view_key_keeps_its_meaning_over_a_task_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = create_app(replay_config("h200-1x"), save_dir=tmp_path / "saved")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("s")  # save, not the serving task, and no hint either
        await until(pilot, lambda: any("saved h200-1x" in n for n in notes(app)))
        await pilot.pause(0.2)
        assert isinstance(app.screen, MainScreen)
        assert not [n for n in notes(app) if "tasks screen" in n]


async def test_j_and_k_scroll_the_help_as_they_scroll_every_list() -> None:
    from gpudash.ui.screens.help import HelpScreen, HelpScroll

    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, settled(app))
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        box = app.screen.query_one(HelpScroll)
        assert box.max_scroll_y > 3  # the help is longer than the screen
        await pilot.press("j", "j", "j")
        await until(pilot, lambda: box.scroll_y == 3)
        await pilot.press("k")
        await until(pilot, lambda: box.scroll_y == 2)
        await pilot.press("G")
        await until(pilot, lambda: box.scroll_y == box.max_scroll_y)
