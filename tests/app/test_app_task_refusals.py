"""The app refuses a task that cannot work before asking, and warns about a host that did not
answer (issue 33, item 3), driven by Pilot against the real core over the test sshd (whose
hosts have no nvidia-smi, as a GPU-less machine has none)."""

from __future__ import annotations

from textual.widgets import Static

from gpudash.config.model import Config
from gpudash.tasks.spec import load_tasks
from gpudash.ui import create_app
from gpudash.ui.screens.confirm import ConfirmTask
from gpudash.ui.screens.tasks import TasksScreen
from gpudash.ui.widgets.log_pane import LogPane
from tests.app.test_app import SIZE, screen_text, settled, static_text, until
from tests.app.test_app_tasks import NET, run_of, state_is
from tests.ssh.test_task_refusals import closed_port
from tests.support.sshd import FakeHost, Sshd


def notes(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.message for n in app._notifications]


async def test_verify_on_a_host_without_a_gpu_is_refused_with_the_reason_and_nothing_asked(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    host = sshd.host_config(fake_host, network_targets=NET)
    app = create_app(Config(None, (host,), tasks=load_tasks({})))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app), timeout=30)
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await pilot.press("V")
        await until(pilot, lambda: notes(app))
        await pilot.pause(0.2)
        assert isinstance(app.screen, TasksScreen)  # no confirmation: nothing to say yes to
        assert notes(app) == [
            "h0: verify not run: no NVIDIA GPU or driver on this host: its probe found no"
            " nvidia-smi or NVML (verify needs a GPU)"
        ]
        assert app.tasks.runs == {}


async def test_a_task_on_a_host_that_did_not_answer_is_warned_and_fails_cannot_connect(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    down = sshd.host_config(fake_host, name="down", port=closed_port(), network_targets=NET)
    hello = {"hello": {"title": "hi", "kind": "script", "key": "1", "run": "echo hi\n"}}
    app = create_app(Config(None, (down,), tasks=load_tasks(hello)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app), timeout=30)
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await pilot.press("1")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        shown = static_text(app.screen.query_one("#confirm-what", Static))
        assert (
            "\n⚠ down did not answer its last probe (connection refused by 127.0.0.1:"
        ) in shown, shown
        assert shown.endswith("): the task will fail unless it answers now"), shown
        await pilot.press("y")
        await until(pilot, state_is(app, "down", "hello", "failed"), timeout=30)
        assert run_of(app, "down", "hello").detail.startswith("cannot connect: ")
        await until(pilot, lambda: "failed: cannot connect" in screen_text(app))
        # The run has no log: the pane shows the whole reason (the note is cut at its width).
        pane = app.screen.query_one(LogPane)
        await until(pilot, lambda: pane.text_lines != [])
        [line] = pane.text_lines
        assert line.startswith("failed: cannot connect: connection refused by 127.0.0.1:"), line
        assert "lost" not in screen_text(app)
