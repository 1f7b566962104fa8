"""The app, driven by Pilot against the real core: replayed captures (tests/fixtures/saved)
and, where the behaviour is about live hosts, the real test sshd. Every wait is on a domain
condition (`until`), never on time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Input, Static

from gpudash.config.model import Config, HostConfig, UiConfig
from gpudash.model import HostState, ProbeFinished
from gpudash.saved import load_host
from gpudash.ui import create_app
from gpudash.ui.app import GpudashApp
from gpudash.ui.messages import ProbeEvent
from gpudash.ui.panels.base import Panel
from gpudash.ui.screens.fleet import FleetScreen
from gpudash.ui.screens.help import HelpScreen
from gpudash.ui.widgets.host_list import HostList
from tests.support import FIXTURES

SAVED = FIXTURES / "saved"
FIVE = ("dgx-h200", "pcie-a40", "h200-1x", "no-gpu", "down")
SIZE = (100, 30)


def replay_host(name: str, directory: Path | None = None, **kw: object) -> HostConfig:
    return HostConfig(
        name=name, transport="replay", replay_dir=str(directory or SAVED / name), **kw
    )


def replay_config(*names: str, **kw: object) -> Config:
    return Config(None, tuple(replay_host(n) for n in names or FIVE), **kw)  # type: ignore[arg-type]


async def until(pilot, condition: Callable[[], object], timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Pause until `condition()` is true; fail after `timeout` seconds of waiting."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {condition.__doc__ or condition}")
        await pilot.pause(0.01)


def settled(app: GpudashApp) -> Callable[[], bool]:
    def check() -> bool:
        """every host finished its probe"""
        return all(r.elapsed_s is not None for r in app.results.values()) and not app.probing.busy

    return check


def screen_text(app: GpudashApp) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips(app.screen.size))


def static_text(widget: Static) -> str:
    content = widget.render()
    return content.plain if hasattr(content, "plain") else str(content)


def drawn_lines(widget: Widget) -> list[str]:
    """Every line the widget draws, scrolled into view or not."""
    width, height = widget.size
    return [strip.text.rstrip() for strip in widget.render_lines(Region(0, 0, width, height))]


def gpu_rows(app: GpudashApp) -> list[str]:
    """The GPUs panel's rows, one per GPU: the lines under its `#` header that start with
    a GPU index."""
    lines = drawn_lines(app.query_one("#panel-gpus", Panel).text)
    header = next((i for i, line in enumerate(lines) if line.startswith("# ")), len(lines))
    rows = []
    for line in lines[header + 1 :]:
        if not line[:1].isdigit():
            break
        rows.append(line)
    return rows


# ---- states --------------------------------------------------------------------------------


async def test_hosts_are_listed_in_config_order_and_end_ready_or_unreachable() -> None:
    app = create_app(replay_config())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        hosts = app.query_one(HostList)
        assert hosts.shown_names == list(FIVE)
        states = {n: r.state for n, r in app.results.items()}
        assert states == {**dict.fromkeys(FIVE, HostState.READY), "down": HostState.FAILED}
        text = screen_text(app)
        assert "8× H200" in text and "unreachable" in text


async def test_the_sidebar_shows_connecting_and_probing_progress_while_events_arrive() -> None:
    from gpudash.model import HostStateChanged
    from gpudash.ui.widgets.host_list import row

    app = create_app(replay_config("dgx-h200"), probe_on_start=False)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(ProbeEvent(HostStateChanged("dgx-h200", HostState.CONNECTING, None, 7)))
        await until(pilot, lambda: app.results["dgx-h200"].state is HostState.CONNECTING)
        assert "connecting" in row(app.results["dgx-h200"]).plain
        app.post_message(ProbeEvent(HostStateChanged("dgx-h200", HostState.PROBING, None, 7)))
        await until(pilot, lambda: app.results["dgx-h200"].state is HostState.PROBING)
        assert "probing 0/7" in row(app.results["dgx-h200"]).plain
        assert "probing 0/7" in screen_text(app)


async def test_every_panel_fills_once_the_host_is_ready() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        assert [row.split()[:3] for row in gpu_rows(app)] == [
            [str(i), "H200", "9.0"] for i in range(8)
        ]
        assert "all 28 pairs NV18" in static_text(
            app.query_one("#panel-topology .panel-text", Static)
        )
        for panel in app.query(Panel):
            words = static_text(panel.text)
            assert "waiting for" not in words and "after the probe" not in words, panel.SECTION


async def test_an_unreachable_host_shows_its_one_line_reason_and_no_panel_data() -> None:
    app = create_app(replay_config("down"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        reason = app.results["down"].error
        assert reason and "\n" not in reason
        text = screen_text(app)
        assert "unreachable" in text
        assert "no data: the host did not answer" in text


async def test_section_data_of_another_shape_is_one_line_in_its_panel_not_a_crash() -> None:
    """A replay saved by a gpudash whose section had another shape: the panel says it cannot
    draw it, the other panels and keys go on."""
    from gpudash.model import SectionDone, SectionResult

    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        odd = SectionResult("toolkit", {"nvcc": "12.8"}, None, {}, 0.1)
        app.post_message(ProbeEvent(SectionDone("h200-1x", odd)))
        await until(pilot, lambda: app.results["h200-1x"].sections["toolkit"] is odd)
        await pilot.pause()
        text = static_text(app.query_one("#panel-toolkit .panel-text", Static))
        assert text == "cannot draw toolkit: dict, not Toolkit"
        assert "H200" in screen_text(app)  # the others drew as before


async def test_a_section_that_failed_shows_an_error_line() -> None:
    import dataclasses

    from gpudash.model import SectionDone, SectionResult

    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        failed = SectionResult("toolkit", None, "timed out after 15s", {}, 15.0, 124)
        app.post_message(ProbeEvent(SectionDone("h200-1x", failed)))
        await until(pilot, lambda: app.results["h200-1x"].sections["toolkit"] is failed)
        text = app.query_one("#panel-toolkit .panel-text", Static)
        assert static_text(text) == "error: timed out after 15s"
        assert dataclasses.replace(failed) == failed


async def test_a_section_with_an_error_and_data_shows_the_error_line_above_the_data() -> None:
    import dataclasses

    from gpudash.model import SectionDone

    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        toolkit = app.results["h200-1x"].sections["toolkit"]
        partial = dataclasses.replace(toolkit, error="nvcc --version: exit 1")
        app.post_message(ProbeEvent(SectionDone("h200-1x", partial)))
        await until(pilot, lambda: app.results["h200-1x"].sections["toolkit"] is partial)
        await pilot.pause()
        lines = [line.strip("▕│ ") for line in screen_text(app).splitlines()]
        at = lines.index("error: nvcc --version: exit 1")
        assert lines[at - 1].startswith("╭─ Toolkit") and lines[at + 1].startswith("nvcc")
        assert not app.query_one("#panel-toolkit .panel-text").has_class("-muted")


# ---- selection, filter ---------------------------------------------------------------------


async def test_arrow_keys_move_the_selection_and_the_host_view_follows() -> None:
    app = create_app(replay_config())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        assert app.selected == "dgx-h200"
        await pilot.press("down")
        await until(pilot, lambda: app.selected == "pcie-a40")
        await until(pilot, lambda: len(gpu_rows(app)) == 8)
        await pilot.press("down", "down", "down")
        await until(pilot, lambda: app.selected == "down")
        await pilot.press("up")
        await until(pilot, lambda: app.selected == "no-gpu")
        assert "nvidia-smi: not found" in screen_text(app)  # the GPUs panel
        # its row: the green dot says ready, so the words that do not fit are the GPUs'
        assert "  no nvidia-smi" in screen_text(app)


async def test_j_k_g_and_capital_g_move_as_the_arrows_home_and_end_do() -> None:
    app = create_app(replay_config())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("j")
        await until(pilot, lambda: app.selected == "pcie-a40")
        await pilot.press("G")
        await until(pilot, lambda: app.selected == "down")
        await pilot.press("k")
        await until(pilot, lambda: app.selected == "no-gpu")
        await pilot.press("g")
        await until(pilot, lambda: app.selected == "dgx-h200")
        await pilot.press("f")  # the fleet table too
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.press("j", "j", "enter")
        await until(pilot, lambda: app.selected == "h200-1x")
        panel = app.query_one("#panel-topology", Panel)
        panel.focus()
        await pilot.press("j")  # a panel scrolls
        await until(pilot, lambda: panel.scroll_y > 0 or panel.max_scroll_y == 0)


async def test_number_keys_jump_to_panels_and_escape_goes_back_to_the_host_list() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("3")
        assert app.focused is app.query_one("#panel-topology")
        await pilot.press("1")
        assert app.focused is app.query_one("#panel-findings")
        assert "esc Hosts" in screen_text(app).splitlines()[-1]
        await pilot.press("escape")  # one obvious key back
        assert isinstance(app.focused, HostList)
        await pilot.press("2", "enter")  # full screen: esc restores first, then leaves
        assert app.screen.maximized is app.query_one("#panel-gpus")
        await pilot.press("escape")
        assert app.screen.maximized is None and app.focused is app.query_one("#panel-gpus")
        await pilot.press("escape")
        assert isinstance(app.focused, HostList)
        await pilot.press("j")
        await until(pilot, lambda: app.selected == "dgx-h200")  # one host: stays


async def test_narrow_screens_shorten_model_names_and_keep_finding_text_over_codes(
    tmp_path: Path,
) -> None:
    """8x 'NVIDIA GeForce RTX 4090' at 80 columns: the sidebar says '8× RTX 4090', not
    '8× GeForce ...'; at 60 columns each finding line leads with its text, code after."""
    import shutil

    rtx = tmp_path / "rtx"
    shutil.copytree(SAVED / "dgx-h200", rtx)
    for path in rtx.glob("gpus*"):
        path.write_text(path.read_text().replace("NVIDIA H200", "NVIDIA GeForce RTX 4090"))
    config = Config(None, (replay_host("rtx", rtx), replay_host("pcie-a40")))
    app = create_app(config)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, settled(app))
        sidebar = [line[:20] for line in screen_text(app).splitlines()]
        assert any("8× RTX 4090" in line for line in sidebar), sidebar[:4]
        assert not any("GeForce" in line for line in sidebar)
        app.select_host("pcie-a40")
        await pilot.resize_terminal(60, 24)
        await until(pilot, lambda: "✖ fail GPU 4 in ERR! state" in screen_text(app))


async def test_a_mouse_click_selects_a_host() -> None:
    app = create_app(replay_config())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        # Each host is two lines; the third host's first line is row 4.
        await pilot.click(HostList, offset=(3, 4))
        await until(pilot, lambda: app.selected == "h200-1x")


async def test_slash_filters_hosts_by_name_or_tag_and_escape_clears_it() -> None:
    hosts = (
        replay_host("dgx-h200", tags=("train",)),
        replay_host("pcie-a40", tags=("inference",)),
        replay_host("h200-1x", tags=("inference",)),
    )
    app = create_app(Config(None, hosts))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        assert not app.query(Input)  # made on first use: not on the first frame's path
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        box = app.query_one(Input)
        assert box.region.bottom <= app.query_one(HostList).region.y  # above the hosts
        await pilot.press(*"a40")
        await until(pilot, lambda: app.query_one(HostList).shown_names == ["pcie-a40"])
        assert app.selected == "pcie-a40"
        app.query_one(Input).value = ""
        await pilot.press(*"infer")
        await until(pilot, lambda: app.query_one(HostList).shown_names == ["pcie-a40", "h200-1x"])
        await pilot.press("escape")
        await until(pilot, lambda: len(app.query_one(HostList).shown_names) == 3)
        assert not app.query_one(Input).display
        assert isinstance(app.focused, HostList)
        await pilot.press("slash")  # the same box again, empty
        assert app.focused is box and box.display and box.value == ""
        assert len(app.query(Input)) == 1


# ---- keys ----------------------------------------------------------------------------------


def finished(messages: list[object], host: str) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m, ProbeEvent) and isinstance(m.event, ProbeFinished) and m.event.host == host
    )


async def test_r_probes_the_selected_host_again_and_only_it() -> None:
    messages: list[object] = []
    app = create_app(replay_config("dgx-h200", "h200-1x"))
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await until(pilot, settled(app))
        await pilot.press("r")
        await until(pilot, lambda: finished(messages, "dgx-h200") == 2)
        await until(pilot, settled(app))
        assert finished(messages, "h200-1x") == 1


async def test_capital_r_probes_every_host_again() -> None:
    messages: list[object] = []
    app = create_app(replay_config())
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await until(pilot, settled(app))
        await pilot.press("R")
        await until(pilot, lambda: all(finished(messages, h) == 2 for h in FIVE))


async def test_a_reprobe_redraws_the_gpu_rows_in_place_with_no_scroll_jump() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        panels = app.query_one("#panels")
        text = app.query_one("#panel-gpus", Panel).text
        rows = gpu_rows(app)
        assert [row.split()[0] for row in rows] == [str(i) for i in range(8)]
        panels.scroll_to(y=5, animate=False)
        await until(pilot, lambda: panels.scroll_y == 5)
        first = app.results["dgx-h200"]
        await pilot.press("r")
        await until(pilot, lambda: app.results["dgx-h200"] is not first and settled(app)())
        await pilot.pause()
        assert panels.scroll_y == 5
        assert app.query_one("#panel-gpus", Panel).text is text  # the same widget, redrawn
        assert gpu_rows(app) == rows


async def test_f_opens_the_fleet_view_sorts_and_enter_opens_the_host() -> None:
    app = create_app(replay_config())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        fleet = app.screen
        assert isinstance(fleet, FleetScreen)
        assert fleet.rows == list(FIVE)
        await pilot.press("o")  # by host name
        assert fleet.rows == sorted(FIVE)
        await pilot.press("o")  # by state: failed hosts sort apart from ready ones
        assert fleet.rows[0] != fleet.rows[-1]
        await pilot.press("o", "o", "o", "o", "o", "o", "o", "o", "o")  # back to config order
        assert fleet.rows == list(FIVE)
        await pilot.press("down", "down", "enter")
        await until(pilot, lambda: not isinstance(app.screen, FleetScreen))
        assert app.selected == "h200-1x"
        assert app.query_one(HostList).highlighted_host == "h200-1x"


async def test_the_fleet_view_highlights_a_host_that_differs() -> None:
    from gpudash.ui.widgets.fleet_columns import COLUMNS, cell, majority

    app = create_app(replay_config())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        hosts = list(app.results.values())
        cc = next(c for c in COLUMNS if c.key == "cc")
        usual = majority(hosts, cc)
        assert usual == "sm_90"  # two H200 hosts against one A40
        odd = cell(app.results["pcie-a40"], cc, usual)
        assert "reverse" in str(odd.style)


async def test_tab_moves_between_panels_and_enter_shows_one_full_screen() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("tab")
        assert app.focused is app.query_one("#panel-findings")
        await pilot.press("tab")
        assert app.focused is app.query_one("#panel-gpus")
        await pilot.press("tab")
        assert app.focused is app.query_one("#panel-topology")
        await pilot.press("shift+tab")
        assert app.focused is app.query_one("#panel-gpus")
        await pilot.press("tab", "enter")
        panel = app.query_one("#panel-topology")
        assert app.screen.maximized is panel
        await pilot.pause()
        assert panel.outer_size.height == SIZE[1] - 1  # the whole screen, less the footer
        assert "⏎ Restore" in screen_text(app).splitlines()[-1]
        await pilot.press("escape")
        assert app.screen.maximized is None
        await pilot.pause()
        assert "⏎ Expand" in screen_text(app).splitlines()[-1]
        await pilot.press("enter", "enter")  # enter both expands and restores
        assert app.screen.maximized is None


async def test_n_toggles_one_column_per_nic_in_the_topology_panel() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("tab", "tab", "tab")
        assert "nearest NIC" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert "nearest NIC" not in screen_text(app)
        assert " N0 " in screen_text(app)


async def test_s_saves_the_selected_host_in_the_probe_save_format(tmp_path: Path) -> None:
    app = create_app(replay_config("h200-1x"), save_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("s")
        await until(pilot, lambda: (tmp_path / "h200-1x" / "meta.json").exists())
    saved = load_host(tmp_path / "h200-1x")
    original = load_host(SAVED / "h200-1x")
    assert saved.state == "ready"
    assert saved.sections.keys() == original.sections.keys()
    assert saved.sections["gpus"][2] == original.sections["gpus"][2]


async def test_question_mark_lists_every_key_with_what_it_does() -> None:
    from gpudash.ui.keys import ALL_KEYS

    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=(100, 60)) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = screen_text(app)
        for key in ALL_KEYS:
            assert key.tooltip in text
        for spec in app.tasks.specs.values():  # each task's key, from the config
            assert f"{spec.name}: {spec.title[:20]}" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))


async def test_every_binding_has_an_id_a_description_and_a_tooltip() -> None:
    from gpudash.ui.keys import ALL_KEYS, bindings

    for binding in bindings(ALL_KEYS):
        assert binding.id and binding.description and binding.tooltip


async def test_the_command_palette_offers_the_app_actions() -> None:
    app = create_app(replay_config("h200-1x", "dgx-h200"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("ctrl+p")
        await pilot.press(*"fleet")
        await pilot.pause(0.3)  # the palette searches in a worker: wait for its result
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))


async def test_keys_remapped_in_the_config_replace_the_defaults() -> None:
    config = replay_config("h200-1x", keys=(("fleet", "v"), ("refresh-host", "f5")))
    app = create_app(config)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        footer = screen_text(app).splitlines()[-1]
        assert "v Fleet" in footer and "f5 Re-probe" in footer  # the footer names the new keys
        assert "f Fleet" not in footer and "r Re-probe" not in footer
        await pilot.press("f")
        await pilot.pause()
        assert not isinstance(app.screen, FleetScreen)
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))


async def test_q_quits_within_a_second() -> None:
    app = create_app(replay_config())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        start = time.monotonic()
        await pilot.press("q")
        await until(pilot, lambda: app._exit_renderables is not None or not app.is_running, 1.0)
    assert time.monotonic() - start < 1.0
    assert app.return_code == 0


async def test_ctrl_c_quits_too() -> None:
    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, 1.0)


async def test_the_theme_comes_from_the_config() -> None:
    app = create_app(replay_config("h200-1x", ui=UiConfig(theme="nord")))
    async with app.run_test(size=SIZE):
        assert app.theme == "nord"


async def test_no_color_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE):
        assert app.no_color


def shown_style(app: GpudashApp, word: str) -> Style:
    """The style the terminal gets for the first cell of `word` on screen: the screen's
    segments through the app's output filters (NO_COLOR's among them)."""
    from textual.color import Color

    for strip in app.screen._compositor.render_strips(app.screen.size):
        if word not in strip.text:
            continue
        segments = list(strip)
        for line_filter in app._filters:
            segments = line_filter.apply(segments, Color(0, 0, 0))
        for segment in segments:
            if word in segment.text or segment.text.strip() == word.split()[0]:
                return segment.style or Style()
    raise AssertionError(f"{word!r} is not on screen")


async def test_under_no_color_fail_is_the_most_visible_severity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual greys every colour by luminance, so red "fail" came out darker than yellow
    "warn". Under NO_COLOR fail is bold reverse, warn bold, and neither is a dark grey."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = create_app(replay_config("pcie-a40"))
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: "✖ fail" in screen_text(app) and "▲ warn" in screen_text(app))
        fail, warn = shown_style(app, "✖ fail"), shown_style(app, "▲ warn")
        assert fail.reverse and fail.bold
        assert warn.bold and not warn.reverse
        for style in (fail, warn):  # greys only, none near the background
            r, g, b = style.color.get_truecolor()
            assert r == g == b and r >= 150


# ---- untrusted text --------------------------------------------------------------------------


def evil_capture(tmp_path: Path) -> Path:
    """dgx-h200 with GPU 3 renamed to carry Rich markup and an OSC title escape."""
    import shutil

    target = tmp_path / "evil"
    shutil.copytree(SAVED / "dgx-h200", target)
    query = target / "gpus.query.txt"
    lines = query.read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace("NVIDIA H200", "[bold red]H200\x1b]0;pwned\x07 [link=x]y")
    query.write_text("".join(lines))
    return target


async def test_markup_and_escapes_in_a_gpu_name_show_literally(tmp_path: Path) -> None:
    config = Config(None, (replay_host("dgx-h200", evil_capture(tmp_path)),))
    app = create_app(config)
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, settled(app))
        await until(pilot, lambda: "3 [bold red]" in screen_text(app))  # cut to its column
        app.query_one("#panel-gpus", Panel).focus()
        await pilot.press("enter")  # full screen: the whole name
        await until(pilot, lambda: "3 [bold red]H200 [link=x]y" in screen_text(app))
        text = screen_text(app)
        assert "\x1b" not in text and "\x07" not in text and "pwned" not in text
        await pilot.press("enter")
        await pilot.press("f")
        await until(pilot, lambda: "[bold red]H200" in screen_text(app))


def test_remote_strings_become_text_never_markup() -> None:
    from gpudash.ui.render import remote

    shown = remote("[bold red]x\x1b]0;t\x07\x1b[31mz")
    assert isinstance(shown, Text)
    assert shown.plain == "[bold red]xz"
    assert not shown.spans


# ---- periodic refresh -------------------------------------------------------------------------


async def test_periodic_refresh_probes_again_and_rounds_never_overlap() -> None:
    from gpudash.model import HostStateChanged

    messages: list[object] = []
    app = create_app(replay_config("dgx-h200", "down"), refresh_s=0.05)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await until(pilot, lambda: finished(messages, "dgx-h200") >= 3)
        await until(pilot, lambda: finished(messages, "down") >= 3)
    for host in ("dgx-h200", "down"):
        in_flight = 0
        for m in messages:
            if not isinstance(m, ProbeEvent) or m.event.host != host:
                continue
            if isinstance(m.event, HostStateChanged) and m.event.state is HostState.CONNECTING:
                in_flight += 1
                assert in_flight == 1, f"{host}: a round started before the last one finished"
            elif isinstance(m.event, ProbeFinished):
                in_flight -= 1


async def test_the_age_of_the_data_shows_per_host_and_in_the_fleet_view() -> None:
    now = [1000.0]
    app = create_app(replay_config("dgx-h200", "pcie-a40"))
    app.clock = lambda: now[0]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await until(pilot, lambda: "probed 0 s ago" in screen_text(app))
        assert "refresh off" in screen_text(app)
        now[0] += 12
        await until(pilot, lambda: "probed 12 s ago" in screen_text(app), timeout=3)
        app.probed_at["pcie-a40"] = now[0] - 180  # as if it had been probed earlier
        await pilot.press("j")
        await until(pilot, lambda: "probed 3 min ago" in screen_text(app))
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await until(pilot, lambda: "probed 12 s – 3 min ago · refresh off" in screen_text(app))


async def test_with_a_refresh_interval_the_age_says_how_often() -> None:
    app = create_app(replay_config("h200-1x"), refresh_s=30)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "refresh every 30 s" in screen_text(app))


async def test_refresh_is_off_by_default() -> None:
    messages: list[object] = []
    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await until(pilot, settled(app))
        for _ in range(20):
            await pilot.pause(0.01)
        assert finished(messages, "h200-1x") == 1
        assert app.refresh_s == 0


async def test_r_on_a_host_still_probing_is_a_no_op() -> None:
    app = create_app(replay_config("h200-1x"), probe_on_start=False)
    async with app.run_test(size=SIZE):
        assert app.probing.probe(["h200-1x"]) == ["h200-1x"]
        assert app.probing.probe(["h200-1x"]) == []
        await asyncio.sleep(0)


async def test_each_host_row_and_fleet_row_shows_its_findings_count_in_colour():
    app = create_app(replay_config("pcie-a40", "h200-1x", "down"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: all(r.findings for r in app.results.values()))
        fails = {
            name: sum(f.severity.value == "fail" for f in r.findings)
            for name, r in app.results.items()
        }
        assert fails["pcie-a40"] >= 1  # GPU 4 in ERR!
        await until(pilot, lambda: f"pcie-a40 ✖{fails['pcie-a40']}" in screen_text(app))
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        fleet = app.screen
        await until(pilot, lambda: f"ready ✖{fails['pcie-a40']}" in screen_text(app))
        state = fleet.cell("pcie-a40", "state")
        mark = state.plain.index("✖")
        assert any(s.start <= mark < s.end and "red" in str(s.style) for s in state.spans)
