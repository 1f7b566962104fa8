"""The footer: the screen's keys as one line, kept as data and redrawn only when they change."""

from __future__ import annotations

from gpudash.ui import create_app
from gpudash.ui.screens.fleet import FleetScreen
from gpudash.ui.screens.help import HelpScreen
from gpudash.ui.widgets.footer import Footer
from tests.app.test_app import SIZE, replay_config, screen_text, settled, until


def footer_line(app) -> str:  # type: ignore[no-untyped-def]
    return screen_text(app).splitlines()[-1]


async def test_the_footer_shows_the_screens_keys_and_the_palette_at_the_right() -> None:
    app = create_app(replay_config("dgx-h200", "pcie-a40"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await until(pilot, lambda: "r Re-probe" in footer_line(app))
        line = footer_line(app)
        assert line.startswith("r Re-probe R Probe all f Fleet / Filter s Save b Tasks ? Help")
        assert line.rstrip().endswith("▏^p palette") and len(line) == SIZE[0]
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await until(pilot, lambda: " o Sort " in footer_line(app))
        assert "f Fleet" not in footer_line(app)


async def test_keys_a_screen_gains_while_covered_show_when_it_returns() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        main = app.screen.query_one(Footer)
        await until(pilot, lambda: any(k.key == "r" for k in main.keys))
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        app.set_keymap({"refresh-host": "f5"})
        await pilot.pause()
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FleetScreen))
        await until(pilot, lambda: "f5 Re-probe" in footer_line(app))
        assert not any(k.key == "r" for k in main.keys)


async def test_a_bindings_signal_with_the_same_keys_does_not_redraw_the_footer() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        footer = app.screen.query_one(Footer)
        await until(pilot, lambda: bool(footer.keys))
        keys = footer.keys
        redraws = []
        refresh = footer.refresh
        footer.refresh = lambda *a, **k: (redraws.append(1), refresh(*a, **k))[1]  # type: ignore[method-assign]
        for _ in range(3):
            app.screen.refresh_bindings()
            await pilot.pause()
        assert footer.keys is keys and redraws == []


async def test_clicking_a_key_in_the_footer_presses_it() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await until(pilot, lambda: "? Help" in footer_line(app))
        footer = app.screen.query_one(Footer)
        column = footer_line(app).index("? Help") + 2
        key = footer.key_at(column)
        assert key is not None and key.key == "question_mark"
        assert footer.key_at(footer_line(app).index("▏")) is None  # the edge is no key
        await pilot.click(Footer, offset=(column, 0))
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_help_and_quit_stay_in_the_footer_however_many_keys_a_screen_has() -> None:
    """The tasks screen at 80 columns with eleven task keys, and the host view at 60: the
    screen's own keys are cut (with '…'), never `? Help` and `q Quit`."""
    from gpudash.tasks.spec import load_tasks
    from gpudash.ui.screens.tasks import TasksScreen

    extra = {
        f"job{n}": {"title": f"job {n}", "kind": "script", "key": str(n), "run": "true\n"}
        for n in range(1, 6)
    }
    app = create_app(replay_config("h200-1x", tasks=load_tasks(extra)))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, settled(app))
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await until(pilot, lambda: "Cancel" in footer_line(app))
        line = footer_line(app)
        assert "? Help" in line and "q Quit" in line and "…" in line, line
        footer = app.screen.query_one(Footer)
        quit_at = line.index("q Quit") + 1
        assert footer.key_at(quit_at) is not None and footer.key_at(quit_at).key == "q"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TasksScreen))
        await pilot.resize_terminal(60, 24)
        await until(pilot, lambda: "Quit" in footer_line(app) and len(footer_line(app)) <= 60)
        line = footer_line(app)
        assert "? Help" in line and "q Quit" in line and line.startswith("r Re-probe"), line
