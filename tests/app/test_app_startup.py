"""What the app does while it starts: the screen's first layout, the collector, event bursts.

Replayed captures and a silent loopback listener; every wait is on a condition."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from textual import events

from gpudash.config.model import Config, HostConfig
from gpudash.model import HostState
from gpudash.ui import create_app
from gpudash.ui.messages import ProbeEvent
from gpudash.ui.widgets.host_view import HostView
from tests.app.test_app import replay_config, replay_host, screen_text, settled, until

BREAKPOINTS = [(0, "-narrow"), (90, "-normal"), (150, "-wide")]


@pytest.fixture
def collector() -> Iterator[None]:
    """Whatever a test does to the collector, the next test finds it on and unfrozen."""
    yield
    gc.enable()
    gc.unfreeze()


def test_width_classes_turn_on_the_widest_breakpoint_reached() -> None:
    from gpudash.ui.screens.main import width_classes

    assert width_classes(80, BREAKPOINTS) == {"-narrow": True, "-normal": False, "-wide": False}
    assert width_classes(90, BREAKPOINTS) == {"-narrow": False, "-normal": True, "-wide": False}
    assert width_classes(200, BREAKPOINTS)["-wide"]
    assert not any(width_classes(5, [(10, "-x")]).values())


@pytest.mark.parametrize(("size", "width_class"), [((80, 24), "-narrow"), ((160, 45), "-wide")])
async def test_the_first_layout_already_has_the_width_class(
    size: tuple[int, int], width_class: str
) -> None:
    """At 80 columns the first frame showed the 100-column sidebar and then jumped."""
    app = create_app(replay_config("dgx-h200"))
    first_layout: list[set[str]] = []
    original = type(app).get_default_screen

    def default_screen(self):  # type: ignore[no-untyped-def]
        screen = original(self)
        layout = screen._refresh_layout

        def record(*args, **kw):  # type: ignore[no-untyped-def]
            if not first_layout:
                first_layout.append(set(screen.classes))
            return layout(*args, **kw)

        screen._refresh_layout = record
        return screen

    app.get_default_screen = default_screen.__get__(app)  # type: ignore[method-assign]
    async with app.run_test(size=size) as pilot:
        await until(pilot, settled(app))
        assert width_class in first_layout[0]
        assert width_class in app.screen.classes


async def test_a_resize_to_the_same_size_does_not_lay_the_screen_out_again() -> None:
    """Textual sends the size up to three more times as it starts, each a full reflow."""
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, settled(app))
        screen = app.screen
        resized = []  # the layouts done for a (new) size; a widget's refresh passes none
        layout = screen._refresh_layout

        def record(size=None, *args, **kw):  # type: ignore[no-untyped-def]
            if size is not None:
                resized.append(size)
            return layout(size, *args, **kw)

        screen._refresh_layout = record  # type: ignore[method-assign]
        screen.post_message(events.Resize(app.size, app.size))
        await pilot.pause()
        await pilot.pause()
        assert resized == []
        await pilot.resize_terminal(160, 30)
        await until(pilot, lambda: "-wide" in screen.classes)
        assert resized and app.query_one("#sidebar").outer_size.width == 34
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: "-normal" in screen.classes)
        assert app.query_one("#sidebar").outer_size.width == 24


async def test_a_burst_of_probe_events_updates_the_host_view_once(collector: None) -> None:
    app = create_app(replay_config("dgx-h200"), probe_on_start=False)
    async with app.run_test(size=(100, 30)) as pilot:
        events_ = [e async for e in app.fleet.probe(["dgx-h200"])]
        assert len(events_) > 5
        view = app.query_one(HostView)
        shown = []
        show = view.show
        view.show = lambda host: (shown.append(host), show(host))[1]  # type: ignore[method-assign]
        for event in events_:
            app.post_message(ProbeEvent(event))
        await until(pilot, lambda: app.results["dgx-h200"].state is HostState.READY and shown)
        await pilot.pause()
        assert len(shown) == 1 and shown[0] is app.results["dgx-h200"]
        assert "8× H200" in screen_text(app)


async def test_the_collector_comes_back_on_when_the_first_rounds_settle(collector: None) -> None:
    """`run_app` turns it off for start-up; the first settle freezes the start-up heap and
    turns it back on, and leaving the app gives the frozen heap back."""
    gc.disable()
    app = create_app(replay_config("dgx-h200", "h200-1x"), gc_paused=True)
    async with app.run_test(size=(100, 30)) as pilot:
        assert not gc.isenabled()
        await until(pilot, settled(app))
        await until(pilot, lambda: app.heap.pauses)
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert app.heap.pauses[0][0] == "start"
        assert app.probing.probe(app.order)
        await until(pilot, lambda: len(app.heap.pauses) > 1)
        assert app.heap.pauses[1][0] == "young"
    assert gc.isenabled() and gc.get_freeze_count() == 0


async def test_the_collector_comes_back_on_even_while_a_host_never_answers(
    collector: None, silent_port: int
) -> None:
    silent = HostConfig(name="silent", address="127.0.0.1", port=silent_port, connect_timeout=30)
    gc.disable()
    app = create_app(Config(None, (replay_host("h200-1x"), silent)), gc_paused=True)
    app.heap.STARTUP_S = 0.3
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.results["h200-1x"].state is HostState.READY)
        await until(pilot, gc.isenabled, timeout=5)
        assert app.results["silent"].state is HostState.CONNECTING
        assert gc.get_freeze_count() > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize(("size", "theme"), [((100, 30), None), ((80, 24), "nord")])
async def test_the_first_screen_is_styled_as_a_full_restyle_would_style_it(
    size: tuple[int, int], theme: str | None
) -> None:
    """The first resume skips Textual's restyle of every widget: nothing may be left stale
    (a focus, a width class, a theme), so restyling everything changes no cell or colour."""
    app = create_app(replay_config("dgx-h200", "pcie-a40", "down"), theme=theme)
    restyles: list[bool] = []
    async with app.run_test(size=size) as pilot:
        await until(pilot, settled(app))
        await pilot.pause()
        before = app.export_screenshot()
        original = app.stylesheet.update_nodes

        def update_nodes(nodes, animate=False):  # type: ignore[no-untyped-def]
            restyles.append(True)
            return original(nodes, animate=animate)

        app.stylesheet.update_nodes = update_nodes  # type: ignore[method-assign]
        app.screen.update_node_styles()
        await pilot.pause()
        assert restyles  # the restyle did run
        assert app.export_screenshot() == before
