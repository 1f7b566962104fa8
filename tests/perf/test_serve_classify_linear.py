"""The serve classifier is linear in its log and bounded in memory (issue 29, speed and
bounds): CPU time about doubles when the log doubles, for healthy logs, logs dense with
'error' lines that match nothing, lines that are all candidates, one line without a newline,
and a failure at the very end; Python's peak allocation does not grow with the file. The
1 GB figure is bench/bench_serve_classify.py's; its smoke size runs here."""

from __future__ import annotations

import itertools
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import bench_serve_classify
from gpudash.serve import classify, logscan

FIXTURES = Path(__file__).parent.parent / "fixtures" / "serve"
MB = 1 << 20
HEALTHY = (FIXTURES / "vllm" / "good-startup-29335.log").read_bytes()
OOM = (FIXTURES / "vllm" / "oom-load-28143.log").read_bytes()


def _fill(unit: bytes, size: int) -> bytes:
    return unit * max(1, size // len(unit))


SHAPES: dict[str, Callable[[int], bytes]] = {
    "healthy": lambda n: _fill(HEALTHY, n),
    "failing_at_end": lambda n: _fill(HEALTHY, n) + OOM,
    "error_dense": lambda n: _fill(b"WARNING some error happened but nothing we know\n", n),
    "candidates": lambda n: _fill(b"INFO GPU KV cache size: 1,587,648 tokens\n", n),
    "one_line": lambda n: b"x" * n,
    "newlines": lambda n: b"\n" * n,
}
SIZES = {name: (4 * MB, 8 * MB, 16 * MB) for name in SHAPES}
SIZES["error_dense"] = SIZES["candidates"] = (1 * MB, 2 * MB, 4 * MB)
MAX_RATIO = 3.0  # 2 expected; noise on a shared 2-core machine
NOISE_S = 0.01


def cpu_time(path: Path) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        classify.classify_file(str(path), "vllm", workers=1)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("shape", list(SHAPES))
def test_classify_file_time_grows_linearly_with_the_log(shape: str, tmp_path: Path) -> None:
    times = []
    for size in SIZES[shape]:
        path = tmp_path / f"{size}.log"
        path.write_bytes(SHAPES[shape](size))
        times.append(cpu_time(path))
        path.unlink()
    for small, big in itertools.pairwise(times):
        if big > NOISE_S:
            assert big / max(small, NOISE_S / 2) < MAX_RATIO, (shape, times)


def test_peak_memory_does_not_grow_with_the_log(tmp_path: Path) -> None:
    peaks = []
    for size in (8 * MB, 64 * MB):
        path = tmp_path / "log"
        path.write_bytes(SHAPES["failing_at_end"](size))
        tracemalloc.start()
        verdict = classify.classify_file(str(path), "vllm", workers=1)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert verdict is not None and verdict.code == "serve.oom"
    assert peaks[1] < peaks[0] * 1.2 + MB, peaks
    assert peaks[1] < 8 * logscan.CHUNK, peaks  # three buffers of 2 chunks, one to count


def test_the_bench_runs_at_its_smoke_size_and_finds_the_failure() -> None:
    rows = bench_serve_classify.run(8)
    assert [r["log"] for r in rows] == ["healthy", "failing"]
    assert rows[0]["code"] is None and rows[1]["code"] == "serve.oom"
    assert all(r["classify_s"] > 0 and r["cat_s"] > 0 and r["grep_s"] > 0 for r in rows)


LINE_SHAPES = {
    "spaces": " " * 9000,
    "prefixes": "(x pid=1) [rank0]: " * 600,
    "dotted_error_head": "a." * 4000 + "Error:",
    "signature_far_out": "x" * 9000 + " NCCL error",
    "progress_bar": "Capturing CUDA graphs:  7%|█▎ | 5/67\r" * 300,
}


@pytest.mark.parametrize("shape", list(LINE_SHAPES))
def test_feeding_lines_one_by_one_is_linear_in_the_number_of_lines(shape: str) -> None:
    """The supervisor feeds the engine's lines as they come: the cost of each line is bounded
    (MAX_LINE), so the whole stays linear however hostile the lines."""
    from gpudash.serve.classify import Classifier
    from gpudash.serve.phases import PhaseTracker

    def feed(count: int) -> float:
        start = time.process_time()
        judge, phases = Classifier("vllm"), PhaseTracker("vllm")
        for _ in range(count):
            judge.feed(LINE_SHAPES[shape])
            phases.feed(LINE_SHAPES[shape])
        return time.process_time() - start

    times = [min(feed(n) for _ in range(2)) for n in (200, 400, 800)]
    for small, big in itertools.pairwise(times):
        if big > NOISE_S:
            assert big / max(small, NOISE_S / 2) < MAX_RATIO, (shape, times)
    assert times[-1] / 800 < 0.005, times  # under 5 ms a line, whatever the line
