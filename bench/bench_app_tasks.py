"""Benchmark: a task flooding its log into the app, against the same task without a screen.

Run:  .venv/bin/python -m bench.bench_app_tasks [--lines 200000] [--rounds 3]

A task prints --lines numbered lines as fast as it can on a test-sshd host (tests/support/sshd.py).
Measured, each a median of --rounds, all in this one run:
- app: the real app (headless, 100x30) with the tasks screen open: from the `y` of the
  confirmation to the last line on the log pane; lines/s reaching the pane;
- key latency while it streams: every 20 ms a key (pageup/pagedown on the runs table) is
  posted; its latency is the time until the focused widget dispatches it (where its binding
  runs), the wait behind the log traffic included. Target: under 100 ms;
- loop lag: how late a 20 ms timer fires (what any key or redraw waits). Both are given from
  the `y` on (the confirmation closing repaints the whole screen once) and for the streaming
  itself (from the first line on the pane to the last);
- memory: the app's RSS before the task and its peak while streaming (the log pane and the
  app's buffer hold RING_LINES lines; the full log is on disk);
- baselines: `gpudash run` of the same task headless (stdout to /dev/null), and `ssh cat`
  of the finished job log (the raw transfer).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from textual import events  # noqa: E402

from gpudash.config.model import Config  # noqa: E402
from gpudash.tasks.spec import load_tasks  # noqa: E402
from gpudash.ui import create_app  # noqa: E402
from gpudash.ui.screens.tasks import TasksScreen  # noqa: E402
from gpudash.ui.task_runs import RING_LINES  # noqa: E402
from gpudash.ui.widgets.log_pane import LogPane  # noqa: E402
from tests.support.sshd import Sshd  # noqa: E402

GPUDASH = Path(sys.executable).with_name("gpudash")
NET = ("http://127.0.0.1:9/",)

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (("--lines", "2000", "--rounds", "1"),)


def body(lines: int) -> str:
    return f"seq 1 {lines} | sed 's/^/log line number /'\n"


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def wait(condition, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(condition)
        await asyncio.sleep(0.01)


async def app_round(sshd: Sshd, lines: int) -> dict[str, float]:
    host = sshd.hosts[0]
    host.reset()
    tasks = load_tasks(
        {"flood": {"title": "flood", "kind": "script", "key": "1", "run": body(lines)}}
    )
    config = Config(None, (sshd.host_config(host, network_targets=NET),), tasks=tasks)
    latencies: list[tuple[float, float]] = []  # (posted at, latency)
    posted: dict[int, float] = {}

    app = create_app(config, theme="textual-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait(lambda: all(r.elapsed_s is not None for r in app.results.values()))
        await pilot.press("b")
        await wait(lambda: isinstance(app.screen, TasksScreen))
        await pilot.press("1")
        await wait(lambda: type(app.screen).__name__ == "ConfirmTask")
        rss_before = rss_mib()
        table = app.screen_stack[-2].query_one("#runs")
        original = table._dispatch_message

        async def timed_dispatch(message):  # type: ignore[no-untyped-def]
            start = posted.pop(id(message), None)
            if start is not None:
                latencies.append((start, time.perf_counter() - start))
            return await original(message)

        table._dispatch_message = timed_dispatch  # type: ignore[method-assign]
        start = time.perf_counter()
        app.post_message(events.Key("y", "y"))  # not pilot.press: it waits for idle
        last = f"log line number {lines}"
        done = asyncio.Event()
        peak = [rss_before]
        lags: list[float] = []
        offsets: list[float] = []

        async def keys() -> None:
            n = 0
            while not done.is_set():
                key = "pagedown" if n % 2 else "pageup"
                event = events.Key(key, None)
                posted[id(event)] = time.perf_counter()
                app.post_message(event)
                n += 1
                await asyncio.sleep(0.02)

        async def ticker() -> None:
            while not done.is_set():
                t = time.perf_counter()
                await asyncio.sleep(0.02)
                lags.append(time.perf_counter() - t - 0.02)
                offsets.append(t)
                peak[0] = max(peak[0], rss_mib())

        jobs = [asyncio.ensure_future(keys()), asyncio.ensure_future(ticker())]
        pane = None
        streaming = None  # when the first line reached the pane
        while True:
            if isinstance(app.screen, TasksScreen):
                pane = app.screen.query_one(LogPane)
                if streaming is None and pane.text_lines:
                    streaming = time.perf_counter()
                if pane.text_lines and pane.text_lines[-1] == last:
                    break
            if time.perf_counter() - start > 300:
                raise TimeoutError("the last line never reached the pane")
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - start
        done.set()
        await asyncio.gather(*jobs)
        run = app.tasks.runs[("h0", "flood")]
        await wait(lambda: run.state == "ok")
        assert run.received == lines, (run.received, lines)
        assert pane is not None and len(pane.text_lines) <= RING_LINES
        held = len(pane.text_lines)
    every = sorted(lat for _, lat in latencies)
    steady = sorted(lat for at, lat in latencies if streaming is not None and at >= streaming)
    steady_lags = [lag for lag, at in zip(lags, offsets, strict=True) if at >= (streaming or 0)]
    return {
        "seconds": elapsed,
        "keys": len(every),
        "key_p50": statistics.median(every) * 1000,
        "key_max": every[-1] * 1000,
        "steady_keys": len(steady),
        "steady_p50": statistics.median(steady or [0.0]) * 1000,
        "steady_max": max(steady or [0.0]) * 1000,
        "lag_max": max(lags) * 1000,
        "steady_lag_max": max(steady_lags or [0.0]) * 1000,
        "rss_before": rss_before,
        "rss_peak": peak[0],
        "held": held,
    }


def headless_round(sshd: Sshd, lines: int, config: Path) -> float:
    sshd.hosts[0].reset()
    start = time.perf_counter()
    subprocess.run(
        [str(GPUDASH), "run", "flood", "h0", "--config", str(config)],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(config.parent)},
    )
    return time.perf_counter() - start


def ssh_cat(sshd: Sshd) -> float:
    host = sshd.hosts[0]
    cmd = sshd.ssh_argv(host, "cat", str(host.home / ".cache/gpudash/jobs/flood/log"))
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def write_config(sshd: Sshd, folder: Path, lines: int) -> Path:
    host = sshd.hosts[0]
    path = folder / "config.toml"
    run = body(lines).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    path.write_text(
        sshd.host_toml(host, "h0") + 'network_targets = ["http://127.0.0.1:9/"]\n'
        f'[tasks.flood]\ntitle = "flood"\nkind = "script"\nrun = "{run}"\n'
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["XDG_STATE_HOME"] = str(root / "state")
        (root / "sshd").mkdir()
        sshd = Sshd(root / "sshd")
        sshd.start()
        config = write_config(sshd, root, args.lines)
        try:
            apps, heads, cats = [], [], []
            for _ in range(args.rounds):
                apps.append(asyncio.run(app_round(sshd, args.lines)))
                heads.append(headless_round(sshd, args.lines, config))
                cats.append(ssh_cat(sshd))
        finally:
            sshd.close()

    def med(key: str) -> float:
        return statistics.median(r[key] for r in apps)

    n = args.lines
    app_s, head_s, cat_s = med("seconds"), statistics.median(heads), statistics.median(cats)
    print(f"{n} lines, median of {args.rounds} rounds (this machine: {os.cpu_count()} CPUs)")
    print(f"{'what':<44} {'seconds':>8} {'lines/s':>10}")
    print(f"{'app: y .. last line on the log pane':<44} {app_s:>8.2f} {n / app_s:>10,.0f}")
    print(f"{'gpudash run (headless, same task)':<44} {head_s:>8.2f} {n / head_s:>10,.0f}")
    print(f"{'ssh cat of the finished log':<44} {cat_s:>8.2f} {n / cat_s:>10,.0f}")
    print(
        f"keys from y to the end: {int(med('keys'))} per round,"
        f" latency p50 {med('key_p50'):.1f} ms,"
        f" max {med('key_max'):.1f} ms; event-loop lag (20 ms timer) max {med('lag_max'):.1f} ms"
    )
    print(
        f"keys while lines stream: {int(med('steady_keys'))} per round, latency p50"
        f" {med('steady_p50'):.1f} ms, max {med('steady_max'):.1f} ms (target < 100 ms);"
        f" loop lag max {med('steady_lag_max'):.1f} ms"
    )
    print(
        f"app RSS: {med('rss_before'):.0f} MiB before the task, peak {med('rss_peak'):.0f} MiB"
        f" while streaming; the pane holds {int(med('held'))} lines (ring {RING_LINES})"
    )


if __name__ == "__main__":
    main()
