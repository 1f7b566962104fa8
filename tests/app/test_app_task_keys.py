"""Task keys work in the host view (issue 33, item 4): the Verify panel says "press V", and V
there asks to run verify with the same confirmation as on the tasks screen; a host-view key
that is also a task's key keeps its host-view meaning (`s` saves; serving's `s` is on the
tasks screen). Replayed captures: nothing runs (every confirmation is answered no)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudash.ui import create_app
from gpudash.ui.screens.confirm import ConfirmTask
from gpudash.ui.screens.main import MainScreen
from tests.app.test_app import SIZE, replay_config, screen_text, settled, until


async def test_v_in_the_host_view_asks_to_run_verify_as_the_panel_says() -> None:
    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("V")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        assert "Run uv -> venv -> torch -> verify on h200-1x" in screen_text(app)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.tasks.runs == {}


async def test_a_host_view_key_keeps_its_meaning_over_a_task_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = create_app(replay_config("h200-1x"), save_dir=tmp_path / "saved")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("s")  # save, not the serving task
        await until(pilot, lambda: any("saved h200-1x" in n.message for n in app._notifications))
        await pilot.pause(0.2)
        assert isinstance(app.screen, MainScreen)
