"""Benchmark: the app's key latency while one host sends pathological output (issue 20 item 2),
against the same app with healthy hosts only, in one run.

Run:  .venv/bin/python -m bench.bench_hostile_keys [--rounds 3] [--attack both]

Two hosts of the test sshd (tests/support/sshd.py), both with fake GPU tools printing the real
H200 captures (tests/fixtures/h200-1x, tests/support/fakegpu.py). In the hostile rounds the
first host's tools print instead (`--attack`):
- nvlink: `nvidia-smi nvlink -s` one 8 MiB line, "GPU 0: x", spaces, "y" (the issue's
  `printf 'GPU 0: x%3000sy\\n'` grown to 8 MiB; the probe keeps 4 MiB of a section);
- topo: `nvidia-smi topo -m` a 9000-column header (GPU0 .. GPU8999) over the real GPU0 row;
- both (default): the two at once.
Each round starts the real app (headless, 100x30) on both hosts. From its start until every
host has finished, and for --after seconds more, a key is posted every 20 ms to the focused
host list, alternately down and up: each one switches the host view between the two hosts,
so the hostile host's panels are drawn again and again. A key's latency is the time until
the host list dispatches it (where its binding runs), the wait behind probing, parsing and
drawing included; loop lag is how late a 20 ms timer fires. Printed per kind (medians over
--rounds of each round's p50 and max): key latency, loop lag, and the time until every host
finished. Target: key latency under 100 ms with a hostile host.

Each round runs in a forked child. One whose event loop does not tick for --freeze seconds
is ended by a watchdog thread, which reports where the loop was stuck; it is reported as
frozen, and the remaining rounds of that kind are skipped (they would freeze the same way).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import queue as queue_module
import shutil
import statistics
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from textual import events

from gpudash.config.model import Config
from gpudash.ui import create_app
from gpudash.ui.widgets.host_list import HostList
from tests.support import FIXTURES, fakegpu
from tests.support.sshd import Sshd

H200 = FIXTURES / "h200-1x"
NET = ("http://127.0.0.1:9/",)
EVERY_S = 0.02

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (
    ("--rounds", "1", "--nvlink-mib", "1", "--topo-columns", "100", "--after", "0.2"),
)


def nvlink_line(size: int) -> str:
    return "GPU 0: x" + " " * size + "y\n"


def topo_header(columns: int) -> str:
    """A header of `columns` GPUs over the real single-GPU row (its own header dropped)."""
    rows = (H200 / "topo_m.txt").read_text().split("\n", 1)[1]
    names = "\t".join(f"GPU{i}" for i in range(columns))
    return f"\t{names}\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n{rows}"


def captures(folder: Path, attack: str | None, nvlink_bytes: int, columns: int) -> Path:
    """The H200 captures, with the attack's files in place of the real ones."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(H200, folder)
    if attack in ("nvlink", "both"):
        (folder / "nvlink_s.txt").write_text(nvlink_line(nvlink_bytes))
    if attack in ("topo", "both"):
        (folder / "topo_m.txt").write_text(topo_header(columns))
    return folder


class Watchdog:
    """Ends this (child) process when `tick` was not called for `limit` seconds, after
    handing `report` where the main thread was stuck."""

    def __init__(self, limit: float, report: Any) -> None:
        self.limit = limit
        self.report = report
        self.last = time.monotonic()
        self._stop = threading.Event()
        self._main = threading.main_thread().ident
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def tick(self) -> None:
        self.last = time.monotonic()

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            if time.monotonic() - self.last > self.limit:
                frame = sys._current_frames().get(self._main or 0)
                stack = traceback.extract_stack(frame) if frame else []
                ours = [f for f in stack if "/gpudash/" in f.filename][-5:]
                where = " <- ".join(
                    f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(ours)
                )
                self.report({"frozen": where or "?"})
                os._exit(0)


def _child(queue: Any, config: Config, after_s: float, freeze_s: float) -> None:
    def report(result: dict[str, Any]) -> None:
        queue.put(result)
        queue.close()
        queue.join_thread()

    with Watchdog(freeze_s, report) as dog:
        report(asyncio.run(one_round(config, after_s, dog)))


def run_round(config: Config, after_s: float, freeze_s: float) -> dict[str, Any]:
    """One round in a forked child (a frozen app cannot be stopped from its own loop)."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue, config, after_s, freeze_s))
    child.start()
    deadline = time.monotonic() + freeze_s + 600
    try:
        while time.monotonic() < deadline:
            try:
                return queue.get(timeout=0.5)
            except queue_module.Empty:
                if not child.is_alive() and queue.empty():
                    raise SystemExit(
                        f"a round died (exit {child.exitcode}): see its traceback"
                    ) from None
        raise SystemExit("a round gave no result in time")
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()


async def one_round(config: Config, after_s: float, dog: Watchdog) -> dict[str, Any]:
    latencies: list[float] = []
    posted: dict[int, float] = {}
    lags: list[float] = []
    app = create_app(config, theme="textual-dark")
    start = time.perf_counter()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        hosts = app.query_one(HostList)
        if app.focused is not hosts:
            hosts.focus()
            await pilot.pause()
        original = hosts._dispatch_message

        async def timed(message: Any) -> Any:
            at = posted.pop(id(message), None)
            if at is not None:
                latencies.append(time.perf_counter() - at)
            return await original(message)

        hosts._dispatch_message = timed  # type: ignore[method-assign]
        done = asyncio.Event()

        async def keys() -> None:
            n = 0
            while not done.is_set():
                event = events.Key("down" if n % 2 == 0 else "up", None)
                posted[id(event)] = time.perf_counter()
                app.post_message(event)  # not pilot.press: it waits for the app to idle
                n += 1
                await asyncio.sleep(EVERY_S)

        async def ticker() -> None:
            while not done.is_set():
                t = time.perf_counter()
                await asyncio.sleep(EVERY_S)
                lags.append(time.perf_counter() - t - EVERY_S)
                dog.tick()

        jobs = [asyncio.ensure_future(keys()), asyncio.ensure_future(ticker())]
        while not (
            all(r.elapsed_s is not None for r in app.results.values()) and not app.probing.busy
        ):
            if time.perf_counter() - start > 300:
                raise TimeoutError("the hosts never finished")
            await asyncio.sleep(0.01)
        settled = time.perf_counter() - start
        await asyncio.sleep(after_s)
        done.set()
        await asyncio.gather(*jobs)
        # Keys still queued are handled before the app closes: one handled while it tears its
        # screens down raised IndexError in `host_view` and the round died (a loaded machine).
        await pilot.pause()
        states = {n: r.state.value for n, r in app.results.items()}
    lat = sorted(latencies)
    return {
        "settled_s": settled,
        "keys": len(lat),
        "p50_ms": statistics.median(lat) * 1000,
        "max_ms": lat[-1] * 1000,
        "lag_max_ms": max(lags) * 1000,
        "states": states,  # type: ignore[dict-item]
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--attack", choices=("nvlink", "topo", "both"), default="both")
    parser.add_argument("--nvlink-mib", type=int, default=8)
    parser.add_argument("--topo-columns", type=int, default=9000)
    parser.add_argument("--after", type=float, default=2.0, help="seconds of keys after")
    parser.add_argument("--freeze", type=float, default=30.0, help="seconds without a tick")
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {"healthy": [], "hostile": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["XDG_STATE_HOME"] = str(root / "state")
        (root / "sshd").mkdir()
        sshd = Sshd(root / "sshd")
        sshd.start()
        bad, good = sshd.hosts[0], sshd.hosts[1]
        config = Config(
            None,
            tuple(
                sshd.host_config(h, name=name, network_targets=NET)
                for h, name in ((bad, "hostile"), (good, "healthy"))
            ),
        )
        try:
            for _ in range(args.rounds):
                for kind in ("healthy", "hostile"):
                    if any("frozen" in r for r in results[kind]):
                        continue  # it would freeze again
                    for host in (bad, good):
                        host.reset()
                    attack = args.attack if kind == "hostile" else None
                    size = args.nvlink_mib << 20
                    fakegpu.install(
                        bad.bin_dir, captures(root / "bad", attack, size, args.topo_columns)
                    )
                    fakegpu.install(good.bin_dir, H200)
                    results[kind].append(run_round(config, args.after, args.freeze))
        finally:
            sshd.close()

    what = {
        "nvlink": f"an nvlink line of {args.nvlink_mib} MiB",
        "topo": f"a topo header of {args.topo_columns} columns",
    }
    shown = [w for k, w in what.items() if args.attack in (k, "both")]
    print(
        f"attack: {' and '.join(shown)} on 1 of 2 hosts; median of {args.rounds} rounds"
        f" (this machine: {os.cpu_count()} CPUs)"
    )
    print(
        f"{'hosts':<26} {'keys':>5} {'key p50 ms':>11} {'key max ms':>11}"
        f" {'loop lag max ms':>16} {'all done s':>11}"
    )
    for kind, label in (("healthy", "2 healthy"), ("hostile", "1 hostile + 1 healthy")):
        rounds = [r for r in results[kind] if "frozen" not in r]
        frozen = [r["frozen"] for r in results[kind] if "frozen" in r]
        if frozen:
            print(f"{label:<26} FROZEN: no loop tick for {args.freeze:.0f} s, in {frozen[0]}")
        if not rounds:
            continue

        def med(key: str, rounds: list[dict[str, Any]] = rounds) -> float:
            return statistics.median(r[key] for r in rounds)

        print(
            f"{label:<26} {med('keys'):>5.0f} {med('p50_ms'):>11.1f} {med('max_ms'):>11.1f}"
            f" {med('lag_max_ms'):>16.1f} {med('settled_s'):>11.2f}"
        )
    hostile = [r for r in results["hostile"] if "frozen" not in r]
    if hostile:
        worst = max(r["max_ms"] for r in hostile)
        print(f"hostile rounds' worst key: {worst:.1f} ms (target < 100 ms)")
        print(f"host states in the last hostile round: {hostile[-1]['states']}")


if __name__ == "__main__":
    main()
