"""How the main screens look, at 100x30 (and one at 80x24), from replayed captures.

Deterministic by construction: replay hosts (no clocks or latencies on these screens), a
fixed theme, no cursor blink, rows in config order, and every capture taken only after
every host has finished (`run_before` waits on that, not on time). Behaviour is asserted in
test_app.py; these only guard the layout.
"""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from gpudash.config.model import Config, HostConfig
from gpudash.ui import create_app
from tests.app.test_app import screen_text
from tests.support import FIXTURES

SAVED = FIXTURES / "saved"
FIVE = ("dgx-h200", "pcie-a40", "h200-1x", "no-gpu", "down")


def app_for(*names: str):  # type: ignore[no-untyped-def]
    hosts = tuple(HostConfig(name=n, transport="replay", replay_dir=str(SAVED / n)) for n in names)
    app = create_app(Config(None, hosts), theme="textual-dark")
    app.clock = lambda: 1000.0  # "probed 0 s ago" however long the capture took
    return app


def after(*keys: str, host: str | None = None):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        for _ in range(2000):
            results = app.results.values()
            done = all(r.elapsed_s is not None for r in results) and not app.probing.busy
            if done and all(r.findings for r in results):  # the rounds' findings too: the
                break  # host list's counts come from them, a moment after the round ends
            await pilot.pause(0.005)
        else:
            raise AssertionError("hosts never settled")
        if host is not None:
            app.select_host(host)
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
        await pilot.pause()
        app.clear_notifications()
        await steady(pilot)

    return run_before


async def steady(pilot: Pilot) -> None:
    """Until the screen draws the same six times in a row: a host switch or a key lays the
    screen out again on a later refresh, and a snapshot taken before it shows the old
    layout (it did: the PCIe host's findings drawn at the height of the previous host's)."""
    last, same = None, 0
    for _ in range(400):
        await pilot.pause(0.05)  # a real moment: a panel's new height lands a refresh later
        now = screen_text(pilot.app)
        same = same + 1 if now == last else 0
        if same >= 5:  # the same six times in a row, over 250 ms: a tag group's findings
            # (computed once all its hosts answered) can replace a host's a moment later
            return
        last = now
    raise AssertionError("the screen never stopped changing")


def test_host_view_of_an_8_gpu_nvlink_host(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """8x H200 NV18, 12 NICs: GPU table and the start of the topology matrix."""
    assert snap_compare(app_for(*FIVE), terminal_size=(100, 30), run_before=after())


def test_topology_panel_full_screen_of_the_nvlink_host(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """tab tab tab enter: the NV18 matrix with nearest NICs, affinity, legend, NIC names."""
    assert snap_compare(
        app_for(*FIVE), terminal_size=(100, 30), run_before=after("tab", "tab", "tab", "enter")
    )


def test_host_view_of_a_pcie_only_host(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """8x A40 over PCIe only, GPU 4 in ERR!."""
    assert snap_compare(app_for(*FIVE), terminal_size=(100, 30), run_before=after(host="pcie-a40"))


def test_host_view_of_an_unreachable_host(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """Connection refused: the reason in the sidebar and header, panels say no data."""
    assert snap_compare(app_for(*FIVE), terminal_size=(100, 30), run_before=after(host="down"))


def test_fleet_view_with_five_hosts(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """f: one row per host; values that differ from most hosts highlighted."""
    assert snap_compare(app_for(*FIVE), terminal_size=(100, 30), run_before=after("f"))


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_fleet_view_at_other_sizes(snap_compare, size) -> None:  # type: ignore[no-untyped-def]
    """80x24: cc and driver/CUDA whole, the rest cut or scrolled; 200x50: extra columns."""
    assert snap_compare(app_for(*FIVE), terminal_size=size, run_before=after("f"))


def test_help_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """?: every key as mapped, with what it does."""
    assert snap_compare(app_for(*FIVE), terminal_size=(100, 30), run_before=after("question_mark"))


def test_host_view_at_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The cramped case: narrower sidebar, the GPU table scrolls sideways."""
    assert snap_compare(app_for(*FIVE), terminal_size=(80, 24), run_before=after())


def test_findings_panel_full_screen_of_the_pcie_host(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """tab enter on the PCIe host: fails first (ERR! GPU, nvcc newer than the driver, no
    torch), then warns, each with facts, why and fix; fix keys in the footer."""
    assert snap_compare(
        app_for(*FIVE), terminal_size=(100, 30), run_before=after("tab", "enter", host="pcie-a40")
    )


def test_host_view_on_a_wide_terminal(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """160x45: wider sidebar, panels in two columns below the GPU table and topology."""
    assert snap_compare(app_for(*FIVE), terminal_size=(160, 45), run_before=after())


SIZES = pytest.mark.parametrize(
    "size", [(80, 24), (100, 30), (200, 50)], ids=lambda s: f"{s[0]}x{s[1]}"
)
"""The three sizes each screen that issue 23 changed is captured at."""


@SIZES
def test_findings_focused_with_the_fix_key_and_help_and_quit_in_the_footer(  # type: ignore[no-untyped-def]
    snap_compare, size
) -> None:
    """tab on the PCIe host: details of each finding, `[F: task]` on the fixable ones, one
    `F Fix` in the footer (no task key shadowing `s`), `? Help` and `q Quit` always."""
    assert snap_compare(
        app_for(*FIVE), terminal_size=size, run_before=after("tab", host="pcie-a40")
    )


@SIZES
def test_fix_picker_for_several_fixable_findings(snap_compare, size) -> None:  # type: ignore[no-untyped-def]
    """tab F on the PCIe host: which finding to fix, each with its task, worst first."""
    assert snap_compare(
        app_for(*FIVE), terminal_size=size, run_before=after("tab", "F", host="pcie-a40")
    )


@SIZES
def test_host_view_under_no_color(snap_compare, size, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """NO_COLOR: greys only; fail in bold reverse, the most visible, warn bold."""
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(app_for(*FIVE), terminal_size=size, run_before=after(host="pcie-a40"))


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_tasks_screen_at_other_sizes(snap_compare, sshd, fake_host, size) -> None:  # type: ignore[no-untyped-def]
    """The tasks screen below at 80x24 (Help and Quit still in the footer) and 200x50."""
    tasks_screen_snapshot(snap_compare, sshd, fake_host, size)


def test_tasks_screen_with_a_failed_run_and_a_finished_log(snap_compare, sshd, fake_host) -> None:  # type: ignore[no-untyped-def]
    tasks_screen_snapshot(snap_compare, sshd, fake_host, (100, 30))


def tasks_screen_snapshot(snap_compare, sshd, fake_host, size) -> None:  # type: ignore[no-untyped-def]
    """b, then 2 (fails rc=3) and 1 (progress bar, ok) on a real sshd host: the runs table
    and the selected run's log, progress collapsed in place. Elapsed times pinned to 1 s."""
    from gpudash.ui.screens.tasks import TasksScreen
    from tests.app.test_app_tasks import open_tasks_and_run, ssh_config, state_is, until

    app = create_app(ssh_config(sshd, [fake_host]), theme="textual-dark")
    app.clock = lambda: 1000.0

    async def run_before(pilot: Pilot) -> None:
        await open_tasks_and_run(pilot, "2")
        await until(pilot, state_is(app, "h0", "boom", "failed"), timeout=20)
        await pilot.press("1")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmTask")
        await pilot.press("y")
        await until(pilot, state_is(app, "h0", "hello", "ok"), timeout=20)
        for run in app.tasks.runs.values():
            run.elapsed_s = 1.0
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        screen.redraw()
        await pilot.pause()
        app.clear_notifications()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
