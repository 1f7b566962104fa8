"""Parser cost against input size, on pathological shapes (issue 20, item 2).

For every parser and every shape of tests/perf/test_parsers_linear.py, the CPU time at 1, 2,
4 and 8 MB (min of 2 runs), the ratio between sizes (2 is linear) and the cost against a
baseline of the same run, `len(text.splitlines())` on the same text. Last, the event loop's
worst latency while one host's 8 MB pathological section is parsed in the worker thread, the
way host_probe parses (target: under 100 ms, as for a key press in the app).

    python -m bench.bench_parsers [PARSER...] [--kib 1024 2048 4096 8192]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time

from tests.perf.test_parsers_linear import PARSERS, SHAPES, SIZES, cpu_time

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (("--kib", "16", "32"),)


def table(names: list[str], sizes: tuple[int, ...]) -> float:
    worst = 0.0
    steps = "→".join(f"{size >> 10}" for size in sizes)
    print(f"{'parser':18} {'shape':12} {'last ms':>9} {'x base':>7}  ratios {steps} KiB")
    for name in names:
        for shape_name, shape in SHAPES.items():
            if cpu_time(PARSERS[name], shape(64 << 10), 1) > 0.5:
                print(f"{name:18} {shape_name:12} super-linear at 64 KB")
                worst = float("inf")
                continue
            times, bases = [], []
            for size in sizes:
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


async def loop_latency(size: int) -> float:
    """Worst event-loop stall while a `size` (8 MB) `GPU 0: x<3000 spaces>y` nvlink text (and
    an smi flood) is parsed in a worker thread, as host_probe does."""
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
        await asyncio.to_thread(PARSERS[name], SHAPES[shape](size))
    done = True
    await ticker
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_parsers")
    parser.add_argument("parsers", nargs="*", metavar="PARSER", help=", ".join(PARSERS))
    parser.add_argument("--kib", type=int, nargs="+", default=[s >> 10 for s in SIZES])
    args = parser.parse_args()
    unknown = [name for name in args.parsers if name not in PARSERS]
    if unknown:
        parser.error(f"no parser {unknown[0]!r} (one of: {', '.join(PARSERS)})")
    sizes = tuple(k << 10 for k in args.kib)
    worst = table(args.parsers or list(PARSERS), sizes)
    print(f"worst ratio between sizes: {worst:.2f} (linear: 2)")
    stall = asyncio.run(loop_latency(sizes[-1]))
    print(
        f"event loop's worst stall while {sizes[-1] >> 10} KiB pathological sections parse:"
        f" {stall * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
