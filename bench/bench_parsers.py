"""Parser cost against input size, on pathological shapes (issue 20, item 2).

For every parser and every shape of tests/perf/test_parsers_linear.py, the CPU time at 1, 2,
4 and 8 MB (min of 2 runs), the ratio between sizes (2 is linear) and the cost against a
baseline of the same run, `len(text.splitlines())` on the same text. Last, the event loop's
worst latency while one host's 8 MB pathological section is parsed in the worker thread, the
way host_probe parses (target: under 100 ms, as for a key press in the app).

    python -m bench.bench_parsers [PARSER...]
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time

from tests.perf.test_parsers_linear import MB, PARSERS, SHAPES, SIZES, cpu_time


def table(names: list[str]) -> float:
    worst = 0.0
    print(f"{'parser':18} {'shape':12} {'8 MB ms':>9} {'x base':>7}  ratios 1→2→4→8 MB")
    for name in names:
        for shape_name, shape in SHAPES.items():
            if cpu_time(PARSERS[name], shape(64 << 10), 1) > 0.5:
                print(f"{name:18} {shape_name:12} super-linear at 64 KB")
                worst = float("inf")
                continue
            times, bases = [], []
            for size in SIZES:
                text = shape(size)
                times.append(cpu_time(PARSERS[name], text, 2))
                bases.append(cpu_time(lambda t: len(t.splitlines()), text, 2))
            ratios = [b / a if a > 1e-4 else 0.0 for a, b in itertools.pairwise(times)]
            worst = max(worst, *ratios)
            base = times[-1] / max(bases[-1], 1e-6)
            print(
                f"{name:18} {shape_name:12} {times[-1] * 1000:9.1f} {base:7.0f}  "
                + " ".join(f"{r:.2f}" for r in ratios)
            )
    return worst


async def loop_latency() -> float:
    """Worst event-loop stall while an 8 MB `GPU 0: x<3000 spaces>y` nvlink text (and an smi
    flood) is parsed in a worker thread, as host_probe does."""
    worst = 0.0
    done = False

    async def tick() -> None:
        nonlocal worst
        while not done:
            before = time.monotonic()
            await asyncio.sleep(0.005)
            worst = max(worst, time.monotonic() - before - 0.005)

    ticker = asyncio.ensure_future(tick())
    for name, shape in (("section.topology", "nvlink_gpu"), ("section.gpus", "smi_row")):
        await asyncio.to_thread(PARSERS[name], SHAPES[shape](8 * MB))
    done = True
    await ticker
    return worst


def main() -> None:
    names = sys.argv[1:] or list(PARSERS)
    worst = table(names)
    print(f"worst ratio between sizes: {worst:.2f} (linear: 2)")
    stall = asyncio.run(loop_latency())
    print(f"event loop's worst stall while 8 MB pathological sections parse: {stall * 1000:.1f} ms")


if __name__ == "__main__":
    main()
