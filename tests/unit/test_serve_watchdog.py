"""The stall watchdog's rule on a clock the test turns: stalled only when neither the log nor
the GPUs' used memory moved for `stall`, and nvidia-smi asked only when the log is quiet."""

from __future__ import annotations

import itertools

from gpudash.serve.watchdog import StallWatch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_quiet_log_with_still_gpu_memory_is_a_stall_after_stall_seconds():
    clock = Clock()
    watch = StallWatch(300, lambda: "81234", clock)
    clock.now += 299
    assert watch.stalled() is None
    clock.now += 2
    assert watch.stalled() == 301


def test_log_lines_keep_it_alive_and_cost_no_nvidia_smi():
    clock, reads = Clock(), []
    watch = StallWatch(300, lambda: reads.append(1) or "1", clock)
    for _ in range(100):
        clock.now += 10
        watch.activity()
        assert watch.stalled() is None
    assert len(reads) == 1  # the first reading only


def test_moving_gpu_memory_keeps_a_silent_engine_alive_and_is_read_sparingly():
    clock, used = Clock(), iter(range(10_000))
    calls = []

    def read() -> str:
        calls.append(clock.now)
        return str(next(used))

    watch = StallWatch(300, read, clock)
    for _ in range(3600):  # an hour of silence while the memory keeps moving
        clock.now += 1
        assert watch.stalled() is None
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert gaps and min(gaps) > 30  # every stall/10 at most (30 s for 5 minutes)


def test_without_nvidia_smi_the_log_alone_decides():
    clock = Clock()
    watch = StallWatch(10, lambda: None, clock)
    clock.now += 11
    assert watch.stalled() == 11
