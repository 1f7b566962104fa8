"""The Serve panel under Pilot, at 100x30 and 80x24: a ready engine with its figures and a
failed one with its quoted log line, why and fix; an engine whose pid is gone reads exited;
and the fleet view's serve column says each in a few words."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gpudash.checks.serve import check_states
from gpudash.model import HostResult, SectionResult
from gpudash.probe.parts import Part
from gpudash.probe.sections import serve
from gpudash.ui import create_app
from gpudash.ui.panels.base import Panel
from gpudash.ui.widgets.fleet_columns import COLUMNS
from tests.app.test_app import drawn_lines, replay_config, screen_text, settled, until
from tests.unit.test_serve_state import OOM, READY

SERVE = next(c for c in COLUMNS if c.key == "serve")
NOW = READY["started"] + 400


def section(*docs: tuple[str, dict, str]) -> serve.Serve:
    """The section as parsed from what the host printed: each file with its pid's answer."""
    parts = {
        f"state.{i}": Part(
            f"state.{i}", 0, f"file {name}.json\npid 1234 {pid}\njson\n{json.dumps(doc)}"
        )
        for i, (name, doc, pid) in enumerate(docs, 1)
    }
    parts["files"] = Part("files", 0, str(len(docs)))
    parts["clock"] = Part("clock", 0, f"{NOW:.0f}")
    return serve.parse(parts)


def with_serve(host: HostResult, data: serve.Serve) -> HostResult:
    result = SectionResult("serve", data, None, {}, 0.0)
    findings = (*host.findings, *check_states(data))
    return replace(host, sections={**host.sections, "serve": result}, findings=findings)


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_the_panel_shows_the_ready_engine_and_the_failed_one_with_its_line(size) -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=size) as pilot:
        await until(pilot, settled(app))
        data = section(("serve", READY, "alive"), ("serve-vllm", {**OOM, "engine": "vllm"}, "dead"))
        app.results["dgx-h200"] = with_serve(app.results["dgx-h200"], data)
        app.show_hosts({"dgx-h200"})
        panel = app.query_one("#panel-serve", Panel)
        panel.focus()
        await pilot.press("enter")  # full screen: the whole panel, as a user reads it
        await until(pilot, lambda: app.screen.maximized is panel)
        await until(pilot, lambda: "failed: serve.oom" in "\n".join(drawn_lines(panel.text)))
        lines = drawn_lines(panel.text)
        text = "\n".join(lines)
        width = size[0]
        assert all(len(line) <= width for line in lines)
        assert lines[0].split()[:5] == [
            "serve",
            "sglang",
            "Qwen3-8B",
            "(/models/Qwen3-8B)",
            ":30000",
        ]
        assert lines[1].startswith("ready 312 s · 41 ms TTFT · 212 tok/s")
        assert "attention flashinfer · FlashInfer JIT-compiled at start" in text
        assert "failed: serve.oom" in text
        quoted = " ".join(line.strip() for line in lines if line.strip())
        line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
        assert f"“{line}” (log line 812)" in quoted
        assert "fix Lower --mem-fraction-static or --cuda-graph-max-bs." in quoted
        screen = screen_text(app)
        assert "failed: serve.oom" in screen and "ready 312 s" in screen


async def test_a_ready_engine_whose_pid_is_gone_reads_exited_in_red() -> None:
    app = create_app(replay_config("dgx-h200"))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, settled(app))
        app.results["dgx-h200"] = with_serve(
            app.results["dgx-h200"], section(("serve", READY, "dead"))
        )
        app.show_hosts({"dgx-h200"})
        panel = app.query_one("#panel-serve", Panel)
        panel.focus()
        await pilot.press("enter")  # full screen: an off-screen panel's height may lag a frame
        await until(pilot, lambda: app.screen.maximized is panel)
        await until(pilot, lambda: len(drawn_lines(panel.text)) > 1)
        lines = drawn_lines(panel.text)
        assert lines[1] == "exited after ready (listening)  pid 1234 is gone"


def test_the_fleet_column_says_each_state_in_a_few_words() -> None:
    def value(*docs: tuple[str, dict, str]) -> str | None:
        return SERVE.value(with_serve(HostResult("h"), section(*docs)))

    assert value(("serve", READY, "alive")) == "ready 312 s · 41 ms TTFT · 212 tok/s"
    assert value(("serve", OOM, "dead")) == "failed: serve.oom"
    stalled = {**READY, "state": "stalled", "phase": "graph_capture"}
    assert value(("serve", stalled, "alive")).startswith("stalled: graph capture ")
    assert value() == "none"
    assert SERVE.value(HostResult("h")) is None  # not arrived
    two = value(("a", READY, "alive"), ("b", OOM, "dead"))
    assert two == "failed: serve.oom (+1)"  # the worst first, the others counted
