"""Start-up phases and facts read from engines' own logs (issue 29, item 3), over recorded
excerpts of public logs (tests/fixtures/serve, sources in the .source sidecars)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudash.serve.phases import PHASE_TITLES, PHASES, PhaseTracker

FIXTURES = Path(__file__).parent.parent / "fixtures" / "serve"


def sidecar(log: Path) -> dict[str, str]:
    rows = (r.partition(": ") for r in log.with_suffix(".source").read_text().splitlines())
    return {k: v for k, _, v in rows}


def replay(engine: str, lines: list[str]) -> tuple[list[tuple[int, str]], PhaseTracker]:
    tracker = PhaseTracker(engine)
    entered = []
    for n, line in enumerate(lines, 1):
        phase = tracker.feed(line)
        if phase:
            entered.append((n, phase))
    return entered, tracker


WITH_PHASES = [p for p in sorted(FIXTURES.glob("*/*.log")) if "phases" in sidecar(p)]


@pytest.mark.parametrize("log", WITH_PHASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recorded_start_ups_enter_their_phases_in_order(log: Path) -> None:
    entered, tracker = replay(log.parent.name, log.read_text().splitlines())
    assert [phase for _, phase in entered] == sidecar(log)["phases"].split()
    assert tracker.phase == entered[-1][1]


def test_sglang_start_up_phases_fall_on_the_lines_that_name_them() -> None:
    lines = (FIXTURES / "sglang" / "good-startup-2468.log").read_text().splitlines()
    entered, _ = replay("sglang", lines)
    assert entered == [(1, "kv_cache"), (3, "graph_capture"), (4, "warmup"), (8, "listening")]
    assert "Load weight end" in lines[0] and "Capture cuda graph begin" in lines[2]


def test_vllm_phases_and_graph_capture_through_a_progress_bar() -> None:
    lines = (FIXTURES / "vllm" / "good-startup-19794.log").read_text().splitlines()
    entered, _ = replay("vllm", lines)
    assert [lines[n - 1].split("] ", 1)[-1][:30] for n, _ in entered] == [
        "Available KV cache memory: 26.",
        "Capturing CUDA graphs: 100%|██",
        "Graph capturing finished in 14",
    ]


def test_phases_only_move_forward_and_other_engines_words_do_not_move_them() -> None:
    tracker = PhaseTracker("sglang")
    assert tracker.feed("[x TP0] Capture cuda graph begin.") == "graph_capture"
    assert tracker.feed("[x TP0] Load weight begin. avail mem=70 GB") is None
    assert tracker.feed("[x TP0] Capture cuda graph begin.") is None
    assert tracker.phase == "graph_capture"
    assert PhaseTracker("vllm").feed("[x TP0] Capture cuda graph begin.") is None
    assert (
        PhaseTracker("transformers").feed(
            "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)"
        )
        == "listening"
    )


@pytest.mark.parametrize(
    "log",
    [p for p in sorted(FIXTURES.glob("*/*.log")) if "backend" in sidecar(p)],
    ids=lambda p: p.stem,
)
def test_the_attention_backend_each_engine_chose(log: Path) -> None:
    _, tracker = replay(log.parent.name, log.read_text().splitlines())
    assert tracker.facts["attention_backend"] == sidecar(log)["backend"]


def test_flashinfer_jit_at_start_is_true_false_or_unknown() -> None:
    built = (FIXTURES / "sglang" / "jit-flashinfer-7855.log").read_text().splitlines()
    _, tracker = replay("sglang", built)
    assert tracker.facts["flashinfer_jit"] is True
    # FlashInfer in use (its JIT loader speaks) and no build before listening: False.
    _, tracker = replay(
        "sglang",
        [
            "[2025-03-13 21:06:59] attention_backend='flashinfer', sampling_backend='flashinfer'",
            (FIXTURES / "any" / "jit-lock-flashinfer972.log").read_text().strip(),
            "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
        ],
    )
    assert tracker.facts == {"attention_backend": "flashinfer", "flashinfer_jit": False}
    # FlashInfer not installed (vLLM says so): unknown, not False.
    lines = (FIXTURES / "vllm" / "backend-v1-15105.log").read_text().splitlines()
    _, tracker = replay("vllm", [*lines, "INFO:     Application startup complete."])
    assert tracker.facts["flashinfer_jit"] is None


def test_phase_names_and_titles_and_hostile_lines() -> None:
    assert PHASES[0] == "launch" and PHASES[-1] == "listening"
    assert set(PHASE_TITLES) == set(PHASES)
    tracker = PhaseTracker("vllm")
    for line in (
        "",
        "\x00" * 9,
        "Using " + "x" * 100000 + " attention backend out of potential backends",
        "attention_backend='\u202e'",
    ):
        tracker.feed(line)
    assert tracker.facts["attention_backend"] is None
