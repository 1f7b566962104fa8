"""The app with many hosts: the fleet view keeps up with probe events by redrawing one row
(and every row only when a column's majority moves), and stays right while doing so.

The 1000-host figures (settle time, key latency, RSS) are python -m bench.bench_scale's `app`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpudash.config.model import Config, HostConfig
from gpudash.model import SectionDone
from gpudash.ui import create_app
from gpudash.ui.messages import ProbeEvent
from gpudash.ui.screens.fleet import FleetScreen
from tests.app.test_app import gpu_rows
from tests.support import FIXTURES

SAVED = FIXTURES / "saved"


async def until(pilot, condition: Callable[[], object], timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.02)


def odd(fleet: FleetScreen, host: str, column: str = "gpus") -> bool:
    """Whether the fleet view highlights `host`'s cell as differing from most hosts."""
    return "reverse" in str(fleet.cell(host, column).style)


async def test_the_fleet_view_moves_its_highlight_when_probe_events_change_the_majority():
    names = ["one-a", "one-b", "eight-a", "eight-b", "eight-c"]
    dirs = ["h200-1x", "h200-1x", "dgx-h200", "dgx-h200", "dgx-h200"]
    hosts = tuple(
        HostConfig(name=n, transport="replay", replay_dir=str(SAVED / d))
        for n, d in zip(names, dirs, strict=True)
    )
    app = create_app(Config(None, hosts))
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: all(r.elapsed_s is not None for r in app.results.values()))
        await until(pilot, lambda: not app.probing.busy)
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen) and app.screen.rows)
        fleet = app.screen
        assert isinstance(fleet, FleetScreen)
        assert [n for n in names if odd(fleet, n)] == ["one-a", "one-b"]

        one_gpu = app.results["one-a"].sections["gpus"]
        for name in ["eight-a", "eight-b"]:  # now three hosts have one GPU: the majority
            app.post_message(ProbeEvent(SectionDone(name, one_gpu)))
        await until(pilot, lambda: not odd(fleet, "one-a"))
        assert [n for n in names if odd(fleet, n)] == ["eight-c"]
        assert fleet.rows == names


async def test_repeated_rounds_keep_the_heap_bounded_and_keys_out_of_full_collections():
    """Settled snapshots are frozen out of the collector (keys never wait on a full
    collection of every host's data), yet round after round what stays frozen is bounded.
    (How much a round leaves frozen depends on the app and on what the tests before this one
    left in the process; the full pass that takes it back is tested with planted cycles in
    the next test.)"""
    import gc

    hosts = tuple(
        HostConfig(name=f"h{i:02d}", transport="replay", replay_dir=str(SAVED / "h200-1x"))
        for i in range(40)
    )
    app = create_app(Config(None, hosts))
    async with app.run_test(size=(160, 40)) as pilot:
        for round_ in range(12):
            if round_:
                assert app.probing.probe(app.order) == app.order
            await until(pilot, lambda r=round_: len(app.heap.pauses) > r)
        kinds = [kind for kind, _, _ in app.heap.pauses]
        frozen = [count for _, _, count in app.heap.pauses]
        assert kinds[0] == "young" and set(kinds) <= {"young", "full"}
        assert frozen[0] > 0 and gc.get_freeze_count() > 0
        assert max(frozen) <= frozen[0] * 1.3  # the growth allowed, plus one round
        await pilot.press("down")
        await until(pilot, lambda: app.selected == "h01")
    assert gc.get_freeze_count() == 0  # the app gave the heap back on exit


def test_a_settle_takes_back_the_cycles_earlier_freezes_kept_once_they_add_a_quarter():
    """Cycles alive at a freeze and dead after it stay frozen (the collector skips them):
    the settle after the frozen heap grew by GROWTH unfreezes and collects them."""
    import gc

    from gpudash.ui.probing import HeapSettler

    class Node:
        def __init__(self) -> None:
            self.me = self  # a reference cycle: only the collector frees it

    heap = HeapSettler()
    try:
        heap.settle()
        base = gc.get_freeze_count()
        extra = int(base * (heap.GROWTH - 1)) + 10_000
        kept = [Node() for _ in range(extra)]
        heap.settle()  # they are frozen while alive ...
        assert heap.pauses[-1][0] == "young"
        del kept  # ... and die as cycles the collector cannot see
        grown = gc.get_freeze_count()
        assert grown >= base + extra
        more = [Node() for _ in range(10)]
        heap.settle()
        kinds = [kind for kind, _, _ in heap.pauses]
        assert kinds == ["young", "young", "full"]
        assert heap.pauses[-1][2] < grown - extra // 2  # at least half of them came back
        del more
    finally:
        heap.release()


async def test_hosts_with_the_same_facts_each_show_as_themselves_and_fixes_target_them():
    """Moving to a host whose sections equal the shown ones redraws no panel, yet the view
    is that host's: its name in the header, its GPU rows, and its fix keys act on it."""
    from gpudash.ui.panels.findings import FindingsPanel
    from gpudash.ui.screens.confirm import ConfirmTask

    same = str(SAVED / "h200-1x")
    hosts = (
        HostConfig(name="twin-a", transport="replay", replay_dir=same),
        HostConfig(name="other", transport="replay", replay_dir=str(SAVED / "dgx-h200")),
        HostConfig(name="twin-b", transport="replay", replay_dir=same),
    )
    app = create_app(Config(None, hosts))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: all(r.findings for r in app.results.values()))
        view = app.host_view
        header = view.query_one("#system-line")
        for host, rows in [("other", 8), ("twin-b", 1), ("twin-a", 1), ("twin-b", 1)]:
            app.select_host(host)
            await until(
                pilot, lambda h=host, n=rows: h in str(header.render()) and len(gpu_rows(app)) == n
            )
        await pilot.press("tab")
        await until(pilot, lambda: isinstance(app.focused, FindingsPanel))
        fixes = [f.fix_task for f in app.results["twin-b"].findings if f.fix_task]
        await pilot.press("F")  # the fix key, then which fix when there are several
        if len(fixes) > 1:
            await until(pilot, lambda: type(app.screen).__name__ == "FixPicker")
            await pilot.press(*["down"] * fixes.index("uv"), "enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        what = app.screen.query_one("#confirm-what").render()
        assert "Run uv on twin-b" in str(what) and "twin-a" not in str(what)


async def test_probe_rounds_leave_no_objects_behind_once_collected():
    """Round after round (`R`, or a refresh interval over a day), the live heap stays flat:
    each round redraws the selected host's fix keys and the footer, and nothing a round
    drew may stay reachable (Textual's own footer, recomposed, kept ~1650 objects a round
    alive through its data binding). Counted with the settler's freeze undone, after a
    full collection, and with Textual's bounded style cache (an LRU of 1024) emptied."""
    import gc

    from textual._styles_cache import StylesCache

    def live_objects() -> int:
        gc.unfreeze()  # what the settler froze is counted, and freed if it is garbage
        StylesCache.get_inner_outer.cache_clear()
        gc.collect()
        return len(gc.get_objects())

    hosts = tuple(
        HostConfig(name=f"h{i:02d}", transport="replay", replay_dir=str(SAVED / "h200-1x"))
        for i in range(30)
    )
    app = create_app(Config(None, hosts))
    counts = {}
    async with app.run_test(size=(160, 40)) as pilot:
        for round_ in range(16):
            if round_:
                await pilot.press("R")
            await until(pilot, lambda r=round_: len(app.heap.pauses) > r)
            if round_ in (5, 15):
                counts[round_] = live_objects()
        assert app.results["h00"].findings and app.selected == "h00"
    assert counts[15] - counts[5] < 10 * 200, counts  # the leak was ~1650 a round
