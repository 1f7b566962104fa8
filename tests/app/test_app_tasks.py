"""Tasks and findings in the app, driven by Pilot against the real core over the real test
sshd (tests/support/sshd.py): a task key, the confirmation, the live log, ok / failed rc=N, cancel
(checked with `ps` on the host), marked hosts, re-probe after a task, and re-attaching to a
job after a restart. Findings come from replayed captures. Waits are on conditions only."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from textual.widgets import DataTable

from gpudash.config.model import Config
from gpudash.tasks import jobs
from gpudash.tasks.prepare import prepare
from gpudash.tasks.spec import load_tasks
from gpudash.transport.ssh import SshPool
from gpudash.ui import create_app
from gpudash.ui.app import GpudashApp
from gpudash.ui.panels.findings import FindingsPanel
from gpudash.ui.screens.confirm import ConfirmCancel, ConfirmTask
from gpudash.ui.screens.fix_picker import FixPicker
from gpudash.ui.screens.tasks import TasksScreen
from gpudash.ui.widgets.log_pane import LogPane
from tests.app.test_app import SIZE, replay_config, screen_text, settled, until
from tests.support import FIXTURES
from tests.support.sshd import FakeHost, Sshd

NET = ("http://127.0.0.1:9/",)

PROGRESS = (
    'echo "fetching"\n'
    "i=0; while [ $i -le 10 ]; do printf '\\r%3d%%' $((i * 10)); i=$((i + 1)); done\n"
    'printf "\\n"\necho "\\033[31mred\\033[0m [bold]not markup[/bold]"\necho done\n'
)


def task_table(marker: str) -> dict[str, dict[str, object]]:
    return {
        "hello": {"title": "say hello", "kind": "script", "key": "1", "run": PROGRESS},
        "boom": {"title": "fail", "kind": "script", "key": "2", "run": "echo bad\nexit 3\n"},
        "sleepy": {
            "title": "sleep long",
            "kind": "script",
            "key": "3",
            "run": f"echo started\nexec sleep {marker}\n",
        },
        "bar": {
            "title": "slow progress bar",
            "kind": "script",
            "key": "5",
            "run": (
                "echo start\n"
                "i=0; while [ $i -le 10 ]; do printf '\\r%d%%' $((i * 10)); sleep 0.4;"
                " i=$((i + 1)); done\n"
                'printf "\\n"\necho end\n'
            ),
        },
        "many": {"title": "many lines", "kind": "script", "key": "6", "run": "seq 1 6000\n"},
        "mkvenv": {
            "title": "make a venv-shaped dir",
            "kind": "script",
            "key": "4",
            "run": (
                "mkdir -p ~/venvs/made/bin\n"
                'ln -sf "$(command -v python3)" ~/venvs/made/bin/python\n'
                'printf "home = /usr/bin\\nversion = 3\\n" > ~/venvs/made/pyvenv.cfg\n'
                "echo made\n"
            ),
        },
    }


def ssh_config(sshd: Sshd, hosts: list[FakeHost], marker: str = "4242.5") -> Config:
    configs = tuple(sshd.host_config(h, network_targets=NET) for h in hosts)
    return Config(None, configs, tasks=load_tasks(task_table(marker)))


def run_of(app: GpudashApp, host: str, task: str):  # type: ignore[no-untyped-def]
    return app.tasks.runs.get((host, task))


def state_is(app: GpudashApp, host: str, task: str, *states: str):  # type: ignore[no-untyped-def]
    def check() -> bool:
        """the run reached the state"""
        run = run_of(app, host, task)
        return run is not None and run.state in states

    return check


def sleeping(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"sleep {marker}" in line]


async def open_tasks_and_run(pilot, key: str) -> None:  # type: ignore[no-untyped-def]
    app = pilot.app
    await until(pilot, settled(app))
    await pilot.press("b")
    await until(pilot, lambda: isinstance(app.screen, TasksScreen))
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, TasksScreen))


async def test_a_task_key_asks_first_then_streams_its_log_and_ends_ok(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    app = create_app(ssh_config(sshd, [fake_host]))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        assert "1 hello" in screen_text(app) and "task keys run on h0" in screen_text(app)
        await pilot.press("1")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        shown = screen_text(app)
        assert "h0: hello" in shown and 'echo "fetching"' in shown
        await pilot.press("n")  # no: nothing runs
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        assert run_of(app, "h0", "hello") is None
        await pilot.press("1")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        await pilot.press("y")
        await until(pilot, state_is(app, "h0", "hello", "ok"), timeout=20)
        pane = app.screen.query_one(LogPane)
        await until(pilot, lambda: "done" in pane.text_lines)
        # The \r redraws collapsed to their last state; escapes stripped; markup literal.
        assert pane.text_lines == ["fetching", "100%", "red [bold]not markup[/bold]", "done"]
        assert "ok" in screen_text(app) and "[bold]not markup[/bold]" in screen_text(app)


async def test_a_progress_bar_redraws_its_line_in_place_while_the_task_runs(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    app = create_app(ssh_config(sshd, [fake_host]))
    async with app.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "5")
        pane = app.screen.query_one(LogPane)
        seen: set[str] = set()

        def bar_moved() -> bool:
            """the unfinished line showed several states, always as the one last line"""
            lines = pane.text_lines
            bars = [line for line in lines if line.endswith("%")]
            assert len(bars) <= 1, lines  # redrawn in place, never appended
            if bars and lines[-1] == bars[0] and run_of(app, "h0", "bar").state == "running":
                seen.add(bars[0])
            return len(seen) >= 2

        await until(pilot, bar_moved, timeout=20)
        # The running row shows its elapsed time, ticking.
        await until(
            pilot, lambda: "running 1" in screen_text(app) or "running 2" in screen_text(app)
        )
        await until(pilot, state_is(app, "h0", "bar", "ok"), timeout=20)
        await until(pilot, lambda: pane.text_lines == ["start", "100%", "end"])


async def test_the_log_pane_keeps_the_last_lines_only_while_the_full_log_is_on_disk(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    from gpudash.ui.task_runs import RING_LINES

    app = create_app(ssh_config(sshd, [fake_host]))
    async with app.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "6")
        await until(pilot, state_is(app, "h0", "many", "ok"), timeout=20)
        pane = app.screen.query_one(LogPane)
        await until(pilot, lambda: pane.text_lines[-1:] == ["6000"])
        assert len(pane.text_lines) == RING_LINES == 5000
        assert pane.text_lines[0] == str(6000 - RING_LINES + 1)
        run = run_of(app, "h0", "many")
        assert run.received == 6000 and len(run.lines) == RING_LINES
        assert Path(run.log_path).read_text().splitlines()[:6000] == [
            str(i) for i in range(1, 6001)
        ]


async def test_a_failing_task_shows_its_exit_code_and_keeps_its_log(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    app = create_app(ssh_config(sshd, [fake_host]))
    async with app.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "2")
        await until(pilot, state_is(app, "h0", "boom", "failed"), timeout=20)
        assert run_of(app, "h0", "boom").rc == 3
        await until(pilot, lambda: "failed rc=3" in screen_text(app))
        assert app.screen.query_one(LogPane).text_lines == ["bad"]
        log = Path(run_of(app, "h0", "boom").log_path)
        assert log.read_text().startswith("bad\n")


async def test_cancel_stops_the_selected_task_and_nothing_is_left_on_the_host(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    marker = f"{uuid.uuid4().int % 100000}.25"
    app = create_app(ssh_config(sshd, [fake_host], marker))
    async with app.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "3")
        await until(pilot, lambda: "started" in app.screen.query_one(LogPane).text_lines, 20)
        assert sleeping(marker), "the task should be running on the host"
        await until(pilot, lambda: "running" in screen_text(app))
        await pilot.press("x")  # asks first, like k9s before a kill: n keeps it running
        await until(pilot, lambda: isinstance(app.screen, ConfirmCancel))
        assert "Stop task sleepy on h0?" in screen_text(app)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await pilot.pause(0.3)
        assert run_of(app, "h0", "sleepy").state == "running" and sleeping(marker)
        await pilot.press("x", "x")  # a second x stops it
        await until(pilot, state_is(app, "h0", "sleepy", "cancelled"), timeout=30)
        assert "cancelled" in screen_text(app)
        assert sleeping(marker) == []


async def test_a_task_runs_on_every_marked_host(sshd: Sshd, fake_hosts: list[FakeHost]) -> None:
    app = create_app(ssh_config(sshd, fake_hosts[:3]))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("space", "down", "down", "space")
        await until(pilot, lambda: app.marked == {"h0", "h2"})
        assert "▸ h0" in screen_text(app) and "▸ h2" in screen_text(app)
        await open_tasks_and_run(pilot, "2")
        await until(pilot, state_is(app, "h0", "boom", "failed"), timeout=20)
        await until(pilot, state_is(app, "h2", "boom", "failed"), timeout=20)
        assert run_of(app, "h1", "boom") is None
        assert app.screen.query_one("#runs", DataTable).row_count == 2


async def test_when_a_task_ends_the_host_is_probed_again_and_the_panels_show_it(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    app = create_app(ssh_config(sshd, [fake_host]))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        venvs = app.results["h0"].data("env").venvs
        assert not any("made" in v.path for v in venvs)
        await open_tasks_and_run(pilot, "4")
        await until(pilot, state_is(app, "h0", "mkvenv", "ok"), timeout=20)

        def probed_again() -> bool:
            """the env section shows the venv the task made"""
            env = app.results["h0"].data("env")
            return any("made" in v.path for v in env.venvs)

        await until(pilot, probed_again, timeout=20)
        await pilot.press("escape")
        await until(pilot, lambda: "venvs/made" in screen_text(app) or probed_again())


async def test_after_a_restart_the_app_finds_the_running_job_and_follows_it(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    marker = f"{uuid.uuid4().int % 100000}.75"
    config = ssh_config(sshd, [fake_host], marker)
    first = create_app(config)
    async with first.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "3")
        await until(pilot, state_is(first, "h0", "sleepy", "running"), timeout=20)
        start = time.monotonic()
        await pilot.press("q")
        await until(pilot, lambda: first._exit_renderables is not None or not first.is_running)
        assert time.monotonic() - start < 1.0
    assert sleeping(marker), "quitting the app must leave the job running on the host"
    second = create_app(config)
    async with second.run_test(size=SIZE) as pilot:
        await until(pilot, state_is(second, "h0", "sleepy", "running"), timeout=20)
        assert run_of(second, "h0", "sleepy").attached
        await pilot.press("b")
        await until(pilot, lambda: isinstance(second.screen, TasksScreen))
        await until(pilot, lambda: "started" in second.screen.query_one(LogPane).text_lines)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(second.screen, ConfirmCancel))
        await pilot.press("y")
        await until(pilot, state_is(second, "h0", "sleepy", "cancelled"), timeout=30)
    assert sleeping(marker) == []


async def test_after_a_restart_elapsed_counts_from_the_start_earlier_runs_list_and_a_marker(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    """A run re-attached after a restart shows the time since it began (not since attach),
    the host's earlier finished runs are listed again from its job dirs, and the host list
    marks the host while a task runs there."""
    marker = f"{uuid.uuid4().int % 100000}.85"
    config = ssh_config(sshd, [fake_host], marker)
    first = create_app(config)
    async with first.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "2")  # boom: fails rc=3
        await until(pilot, state_is(first, "h0", "boom", "failed"), timeout=20)
        await pilot.press("3")
        await until(pilot, lambda: isinstance(first.screen, ConfirmTask))
        await pilot.press("y")
        await until(pilot, state_is(first, "h0", "sleepy", "running"), timeout=20)
        begun = time.monotonic()
        await pilot.press("escape")
        await until(pilot, lambda: "⚙ h0" in screen_text(first))  # a task runs on h0
        await pilot.pause(2.5)
        await pilot.press("q")
        await until(pilot, lambda: first._exit_renderables is not None or not first.is_running)
    second = create_app(config)
    async with second.run_test(size=SIZE) as pilot:
        await until(pilot, state_is(second, "h0", "sleepy", "running"), timeout=20)
        run = run_of(second, "h0", "sleepy")
        assert run.elapsed() >= time.monotonic() - begun - 1.5  # since it began, ±1 s id
        await until(pilot, state_is(second, "h0", "boom", "failed"), timeout=20)
        assert run_of(second, "h0", "boom").rc == 3
        await until(pilot, lambda: "⚙ h0" in screen_text(second))
        await pilot.press("b")
        await until(pilot, lambda: isinstance(second.screen, TasksScreen))
        await until(pilot, lambda: "failed rc=3" in screen_text(second))
        await until(pilot, lambda: "earlier run" in screen_text(second))
        table = second.screen.query_one("#runs", DataTable)
        await pilot.press("g", *["j"] * table.get_row_index("h0\tsleepy"))  # to its row
        await until(pilot, lambda: second.screen.selected_run is run)
        await pilot.press("x", "y")
        await until(pilot, state_is(second, "h0", "sleepy", "cancelled"), timeout=30)
        await pilot.press("escape")
        await until(pilot, lambda: "⚙ h0" not in screen_text(second))
    assert sleeping(marker) == []


# ---- findings ------------------------------------------------------------------------------


async def test_the_findings_panel_lists_the_worst_first_with_why_and_fix() -> None:
    app = create_app(replay_config("pcie-a40"))
    async with app.run_test(size=(100, 50)) as pilot:
        await until(pilot, lambda: bool(app.results["pcie-a40"].findings))
        panel = app.query_one(FindingsPanel)
        # Drawn at its new height too: a render between the update and the layout shows the
        # new text in the old one-line box.
        await until(pilot, lambda: "gpus.err" in screen_text(app) and "▲ warn" in screen_text(app))
        # One line each while another widget has focus: fails first, fix keys in brackets.
        text = screen_text(app)
        assert text.index("✖ fail gpus.err") < text.index("▲ warn")
        assert "env.no_uv [F: uv]" in text and "why " not in text
        await pilot.press("tab", "enter")  # focus it and show it full screen: the details
        await until(pilot, lambda: app.screen.maximized is panel and "why " in screen_text(app))
        text = screen_text(app)
        rows = [line.strip("│ ") for line in text.splitlines() if "│" in line]
        assert rows[0].startswith("✖ fail gpus.err  GPU 4 in ERR! state")
        assert rows[1].startswith("facts gpus 4")
        assert rows[2].startswith("why   nvidia-smi cannot read the GPU")
        assert any(r.startswith("fix   Check `dmesg") for r in rows)
        assert "press  F  to run task uv" in text
        assert "GPU memory already in use" in text


async def test_switching_hosts_sizes_the_findings_to_the_new_hosts_count() -> None:
    """From a host with 5 finding lines to one with 8 and back: the panel's body is as tall
    as the host's lines every time (it once kept the previous host's height now and then,
    hiding the extra findings without a scrollbar)."""
    app = create_app(replay_config())
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, settled(app))
        body = app.query_one(FindingsPanel).text
        for host, count in [("pcie-a40", 8), ("dgx-h200", 5)] * 3:
            app.select_host(host)
            for _ in range(20):  # as many refreshes as it takes; a stale height never moves
                await pilot.pause()
            assert body.size.height == count
            assert screen_text(app).count("│ ✖ fail") + screen_text(app).count("│ ▲ warn") == (
                count - 1
            )


async def test_f_in_the_findings_panel_asks_which_fix_then_opens_its_confirmation() -> None:
    app = create_app(replay_config("h200-1x", "pcie-a40"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: all(r.findings for r in app.results.values()))
        await pilot.press("tab")
        await until(pilot, lambda: isinstance(app.focused, FindingsPanel))
        assert "F Fix" in screen_text(app).splitlines()[-1]
        fixes = [f.fix_task for f in app.results["h200-1x"].findings if f.fix_task]
        await pilot.press("F")
        if len(fixes) > 1:  # several: which one first, the worst on top
            await until(pilot, lambda: isinstance(app.screen, FixPicker))
            assert "Fix which finding?" in screen_text(app)
            await pilot.press(*["down"] * fixes.index("uv"), "enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        text = screen_text(app)
        assert "Run uv on h200-1x" in text and "h200-1x: uv" in text
        assert "pcie-a40" not in text.split("Run this?")[1]
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmTask))
        assert not app.tasks.runs


async def test_with_the_findings_focused_s_still_saves_and_task_keys_run_nothing(
    tmp_path: Path,
) -> None:
    """A fix used to be bound to its task's key while Findings had focus: `s` (save in the
    host view) became "Fix: serving" there. Now every key means one thing on the screen."""
    from gpudash.config.load import parse_config

    saved = FIXTURES / "saved" / "h200-1x"
    config = parse_config(
        f'[hosts.box]\ntransport = "replay"\nreplay_dir = "{saved}"\n'
        'expect = { models = ["acme/tiny-model-7b"] }\n',
        "gpudash.toml",
    )
    app = create_app(config, save_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        assert any(f.fix_task == "model" for f in app.results["box"].findings)
        await pilot.press("tab")
        await until(pilot, lambda: isinstance(app.focused, FindingsPanel))
        footer = screen_text(app).splitlines()[-1]
        assert "Fix:" not in footer and "s Save" in footer
        await pilot.press("s", "m", "u")
        await until(pilot, lambda: any(tmp_path.iterdir()))
        await pilot.pause(0.2)
        assert not isinstance(app.screen, (ConfirmTask, FixPicker)) and not app.tasks.runs


async def test_the_command_palette_offers_each_task_behind_the_same_confirmation() -> None:
    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("ctrl+p")
        await pilot.press(*"Task: venv")
        await until(pilot, lambda: "Create a venv with uv" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        assert "Run uv -> venv on h200-1x" in screen_text(app)


async def test_a_reprobe_of_some_sections_runs_only_those_and_the_host_stays_ready() -> None:
    from gpudash.model import HostStateChanged, SectionDone
    from gpudash.ui.messages import ProbeEvent

    messages: list[object] = []
    shown: list[str] = []  # the host's state as each message arrived

    def hook(message: object) -> None:
        messages.append(message)
        shown.append(app.results["h200-1x"].state.value)

    app = create_app(replay_config("h200-1x"))
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await until(pilot, settled(app))
        before = dict(app.results["h200-1x"].sections)
        messages.clear()
        shown.clear()
        app.probing.reprobe("h200-1x", ("env",))  # what a venv/torch/serving task changes
        await until(pilot, settled(app))
        await until(pilot, lambda: app.results["h200-1x"].sections["env"] is not before["env"])
        events = [m.event for m in messages if isinstance(m, ProbeEvent)]
        assert {e.result.name for e in events if isinstance(e, SectionDone)} == {"env"}
        after = app.results["h200-1x"].sections
        assert all(after[name] is before[name] for name in before if name != "env")
        states = [e.state.value for e in events if isinstance(e, HostStateChanged)]
        assert "ready" in states
        assert set(shown) == {"ready"}  # never "connecting" or "probing 1/1" meanwhile


async def test_the_copy_task_runs_from_the_app_with_its_source_host(
    sshd: Sshd, fake_hosts: list[FakeHost]
) -> None:
    source, target = fake_hosts[1], fake_hosts[0]
    (source.home / "data" / "sub").mkdir(parents=True)
    (source.home / "data" / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 5000)
    tasks = load_tasks(
        {"copy": {"params": {"from": source.name, "path": "~/data", "via": "gpudash"}}}
    )
    hosts = tuple(sshd.host_config(h, network_targets=NET) for h in (target, source))
    app = create_app(Config(None, hosts, tasks=tasks))
    async with app.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "C")
        await until(pilot, state_is(app, "h0", "copy", "ok", "failed", "lost", "blocked"), 60)
        run = run_of(app, "h0", "copy")
        assert run.state == "ok", (run.state, run.detail, list(run.lines)[-5:])
        copied = target.home / "data" / "sub" / "weights.bin"
        assert copied.read_bytes() == b"\x00\x01" * 5000


async def test_the_tasks_screen_keys_follow_the_keys_table_of_the_config() -> None:
    config = replay_config("h200-1x", keys=(("task-cancel", "c"), ("tasks-close", "escape,z")))
    app = create_app(config)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        footer = screen_text(app).splitlines()[-1]
        assert "c Cancel" in footer and "x Cancel" not in footer
        await pilot.press("z")
        await until(pilot, lambda: not isinstance(app.screen, TasksScreen))


async def test_a_fix_key_carries_the_findings_parameters_into_the_task() -> None:
    from gpudash.config.load import parse_config

    saved = FIXTURES / "saved" / "h200-1x"
    config = parse_config(
        f'[hosts.box]\ntransport = "replay"\nreplay_dir = "{saved}"\n'
        'expect = { models = ["acme/tiny-model-7b"] }\n',
        "gpudash.toml",
    )
    app = create_app(config)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "expect.model_missing [F: model]" in screen_text(app))
        await pilot.press("tab")
        await until(pilot, lambda: isinstance(app.focused, FindingsPanel))
        fixes = [f.fix_task for f in app.results["box"].findings if f.fix_task]
        await pilot.press("F")
        if len(fixes) > 1:
            await until(pilot, lambda: isinstance(app.screen, FixPicker))
            await pilot.press(*["down"] * fixes.index("model"), "enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        text = screen_text(app)
        assert "box: model" in text and "GPUDASH_REPO=acme/tiny-model-7b" in text


async def test_uv_on_a_host_the_probe_found_offline_stops_with_the_cause_in_one_line(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    """The probe could not resolve any named site: the uv task is blocked before anything
    is sent, its note names the cause and the way out (not "no usable pip", then
    "uv: not found", rc 127). Names under .invalid never resolve (RFC 2606)."""
    sites = ("https://pypi.invalid/simple/", "https://astral.invalid/")
    host = sshd.host_config(fake_host, network_targets=sites)
    app = create_app(Config(None, (host,), tasks=load_tasks({})))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app), timeout=30)
        target = app.results["h0"].data("network").targets[0]
        assert target.dns_ok is False, target  # the probe's own finding, on the host
        await open_tasks_and_run(pilot, "u")
        await until(pilot, state_is(app, "h0", "uv", "blocked"), timeout=20)
        note = run_of(app, "h0", "uv").detail
        assert note == (
            "uv: cannot reach pypi.invalid, astral.invalid: name resolution failed (the probe's"
            " network check): set https_proxy, or install uv by hand"
        )
        assert "cannot reach pypi.invalid, astral.invalid: name resolution" in screen_text(app)


async def test_a_failed_runs_last_line_is_its_note_and_long_log_lines_wrap(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    cause = "error: the actual cause is at the very end of this line"
    long_line = "x" * 180 + " " + cause
    tasks = {
        "long": {
            "title": "long",
            "kind": "script",
            "key": "1",
            "run": (
                f"echo '{long_line}'\necho 'curl: (6) Could not resolve host: astral.sh'\nexit 6\n"
            ),
        }
    }
    host = sshd.host_config(fake_host, network_targets=NET)
    app = create_app(Config(None, (host,), tasks=load_tasks(tasks)))
    async with app.run_test(size=SIZE) as pilot:
        await open_tasks_and_run(pilot, "1")
        await until(pilot, state_is(app, "h0", "long", "failed"), timeout=20)
        assert run_of(app, "h0", "long").detail == "curl: (6) Could not resolve host: astral.sh"
        await until(pilot, lambda: "Could not resolve host: astral.sh" in screen_text(app))
        rows = screen_text(app)
        assert "failed rc=6" in rows
        # the log pane wraps: the end of the 240-character line is on a 100-column screen
        await until(pilot, lambda: "the very end of this line" in screen_text(app))
        assert app.screen.query_one(LogPane).text_lines[0] == long_line


async def test_a_job_found_after_a_restart_masks_every_configured_secret_in_its_logs(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20: the re-attach masked only hf_-shaped tokens, so a WANDB key landed in clear
    in ~/.local/state/gpudash/logs. The job is launched by the core (as a first app would),
    then a fresh app finds it and follows its log from byte 0."""
    key = "wandbKEY" + uuid.uuid4().hex
    monkeypatch.setenv("WANDB_API_KEY", key)
    marker = f"{uuid.uuid4().int % 100000}.25"
    table = {
        "train": {
            "title": "train with a key",
            "kind": "script",
            "key": "7",
            "secrets": ["WANDB_API_KEY"],
            "run": f'echo "key: $WANDB_API_KEY"\nexec sleep {marker}\n',
        }
    }
    config = Config(
        None, (sshd.host_config(fake_host, network_targets=NET),), tasks=load_tasks(table)
    )
    prepared = prepare(config.tasks["train"])
    pool = SshPool([])
    try:
        transport = pool.transport(config.hosts[0])
        job = jobs.Launch("train", prepared.script, "r1", secrets=prepared.secrets_env)
        await jobs.launch(transport, job)
    finally:
        await pool.close()
    host_log = fake_host.home / ".cache/gpudash/jobs/train/log"
    deadline = time.monotonic() + 10
    while key not in host_log.read_text() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    app = create_app(config)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, state_is(app, "h0", "train", "running"), timeout=20)
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        pane = app.screen.query_one(LogPane)
        await until(pilot, lambda: "key: ********" in pane.text_lines)
        assert not any(key in line for line in pane.text_lines)
        await pilot.press("x", "x")  # cancel, confirmed by a second x
        await until(pilot, state_is(app, "h0", "train", "cancelled"), timeout=30)
    logs = list((isolated_home / ".local/state/gpudash/logs").rglob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text()
        assert "key: ********" in text and key not in text, log
    assert sleeping(marker) == []
