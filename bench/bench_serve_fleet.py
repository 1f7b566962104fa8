"""Benchmark: the `serve` task on N hosts at once in the app, against `gpudash run serve`.

Run:  .venv/bin/python -m bench.bench_serve_fleet [--hosts 100] [--speed 5]

Issue 29, "Speed and bounds": the panel stays responsive while 100 hosts stream logs. Each
host is a test-sshd host (tests/support/sshd.py; one sshd per 8 hosts, since OpenSSH listens
on at most 16 sockets per daemon), with its own HOME and bin dir: the fake H200 toolset
(tests/support/fakegpu.py, so the probe sees a GPU and the preflight lets sglang launch), a
fake SGLang venv (tests/support/fake_engine.py) replaying the recorded start-up log
tests/fixtures/serve/sglang/good-startup-2468.log at --speed lines/s, then binding a real port
(30000 up, port = "auto") and serving, and a model folder (config.json + weights) under
~/models. The task's params are the same for every host (`~/venv`, `~/models/tiny`): `~`
is each host's own HOME. Measured, all in this one run:
- app: the real app (headless, 100x30): every host marked, the tasks screen, `S`, `y`; from
  the `y` until every host's serve run is ok (READY: the task exits 0 only once a streamed
  chat gave tokens); lines/s reaching the app (every host's lines, supervisor and engine);
- key latency while they stream: every 20 ms a key (pageup/pagedown on the runs table) is
  posted; its latency is the time until the focused widget dispatches it. Target: < 100 ms;
- loop lag: how late a 20 ms timer fires; memory: the app's RSS before and its peak;
- baseline: `gpudash run serve -y` over every host (headless, stdout to /dev/null).
The hosts share this machine's CPUs with the app, where a real fleet's are other machines;
niceness does not separate them (each ssh session and each job is a setsid session, so an
autogroup of its own that the scheduler weighs like the app's whole session), so by default
the hosts are pinned to the last CPU and the app (and the headless run) to the others;
--shared leaves every process on every CPU.
Between the two, every engine is killed (its process group, from the job dir) and the hosts'
job and serve state removed, so both start from the same clean hosts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from textual import events  # noqa: E402

from gpudash.config.load import load_config  # noqa: E402
from gpudash.ui import create_app  # noqa: E402
from gpudash.ui.screens.tasks import TasksScreen  # noqa: E402
from tests.support import FIXTURES, fakegpu  # noqa: E402
from tests.support.fake_engine import make_fake_venv  # noqa: E402
from tests.support.sshd import FakeHost, Sshd  # noqa: E402

LOG = FIXTURES / "serve" / "sglang" / "good-startup-2468.log"
UNSHARE, IP = "/usr/bin/unshare", "/usr/sbin/ip"
TASK = (
    '[tasks.serve]\nparams = { venv = "~/venv", engine = "sglang", model = "~/models/tiny",'
    ' port = "auto", ready_timeout = "5m" }\n'
)

# The smoke size (tests/perf/test_bench_smoke.py runs it): three hosts, the log at full speed.
SMOKE: tuple[tuple[str, ...], ...] = (("--hosts", "3", "--speed", "0"),)


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def sched() -> tuple[float, float]:
    """This thread's (CPU time, time runnable but waiting for a CPU), seconds (schedstat)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            ran, waited, _ = f.read().split()
        return int(ran) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return 0.0, 0.0


class StallSampler(threading.Thread):
    """Where the loop thread is while the loop is late: every 50 ms, when no tick came for
    200 ms, the loop thread's innermost gpudash/textual/asyncssh frames are counted."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.loop_thread = threading.get_ident()
        self.tick = time.perf_counter()
        self.seen: Counter[str] = Counter()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.05):
            if time.perf_counter() - self.tick < 0.2:
                continue
            frame = sys._current_frames().get(self.loop_thread)
            if frame is None:
                continue
            stack = traceback.extract_stack(frame)
            ours = [
                f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.name}"
                for f in stack
                if any(k in f.filename for k in ("gpudash", "textual", "asyncssh", "rich"))
            ]
            self.seen[" < ".join(reversed(ours[-3:])) or stack[-1].name] += 1


async def wait(condition, timeout: float = 600.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(condition)
        await asyncio.sleep(0.05)


def prepare(host: FakeHost, speed: float) -> None:
    """A clean host: the fake GPU tools, a fake SGLang venv and a complete model folder."""
    host.reset()
    fakegpu.install(host.bin_dir, FIXTURES / "h200-1x")
    venv = make_fake_venv(host.home / "venv", "sglang", LOG, serve="ok", speed=speed)
    own_port_space(venv / "bin" / "python")
    model = host.home / "models" / "tiny"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"num_attention_heads": 32}))
    (model / "model.safetensors").write_bytes(b"\0" * 64)


def own_port_space(python: Path) -> None:
    """Run the host's serve (supervisor and engine) in a network namespace of its own.

    Real hosts have a port space each; these share one loopback, where N supervisors picking
    the "first free port from 30000" at once race for the same one (the pick and the engine's
    bind are seconds apart: serve.port_in_use). The venv's python, which the serve job runs
    the supervisor with, enters a fresh namespace (root: `unshare -n`, loopback up) once; the
    engine it starts inherits it (GD_BENCH_NETNS set), so supervisor and engine still meet
    on 127.0.0.1:PORT, and each host's "auto" is 30000, as on a real fleet.
    """
    real = python.with_name("python-real")
    python.rename(real)
    python.write_text(
        "#!/bin/sh\n"
        'if [ -z "${GD_BENCH_NETNS:-}" ]; then\n'
        "  export GD_BENCH_NETNS=1\n"
        f'  exec {UNSHARE} --net -- /bin/sh -c \'{IP} link set lo up && exec "$0" "$@"\''
        f' {real} "$@"\n'
        "fi\n"
        f'exec {real} "$@"\n'
    )
    python.chmod(0o755)


def stop_engines(hosts: list[FakeHost]) -> int:
    """Kill every engine a serve run left (its process group, as `gpudash stop` finds it) and
    clear the hosts' job and serve state; returns how many groups were killed."""
    killed = 0
    for host in hosts:
        cache = host.home / ".cache" / "gpudash"
        pgids = set()
        with contextlib.suppress(OSError, ValueError):
            pgids.add(int((cache / "jobs" / "serve" / "service.pgid").read_text()))
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            pgids.add(int(json.loads((cache / "serve" / "serve.json").read_text())["pgid"]))
        for pgid in pgids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
                killed += 1
        subprocess.run(["rm", "-rf", str(cache)], check=False)
    return killed


def write_config(sshds: list[Sshd], hosts: list[FakeHost], folder: Path) -> Path:
    tables = []
    for k, host in enumerate(hosts):
        sshd = sshds[k // len(sshds[0].hosts)]
        tables.append(sshd.host_toml(host, f"h{k}") + 'network_targets = ["http://127.0.0.1:9/"]\n')
    path = folder / "config.toml"
    path.write_text("\n".join(tables) + "\n" + TASK)
    return path


async def app_round(config: Path, n: int) -> dict[str, float]:
    latencies: list[tuple[float, float]] = []  # (posted at, latency)
    posted: dict[int, float] = {}
    app = create_app(load_config(str(config)), theme="textual-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait(lambda: all(r.elapsed_s is not None for r in app.results.values()))
        names = [f"h{k}" for k in range(n)]
        # Marking: what `space` does on each row, for all N at once (N key presses plus the
        # cursor moves between them measure nothing this bench is about).
        app.marked.update(names)
        app.host_list.set_marked(app.marked)
        await pilot.press("b")
        await wait(lambda: isinstance(app.screen, TasksScreen))
        await pilot.press("S")
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
        start, sched0 = time.perf_counter(), sched()
        app.post_message(events.Key("y", "y"))  # not pilot.press: it waits for idle
        done = asyncio.Event()
        peak = [rss_before]
        lags: list[tuple[float, float, float, float]] = []  # (set at, lag, ran, waited)
        sampler = StallSampler()
        sampler.start()

        async def keys() -> None:
            k = 0
            while not done.is_set():
                event = events.Key("pagedown" if k % 2 else "pageup", None)
                posted[id(event)] = time.perf_counter()
                app.post_message(event)
                k += 1
                await asyncio.sleep(0.02)

        async def ticker() -> None:
            while not done.is_set():
                t, (ran, waited) = time.perf_counter(), sched()
                await asyncio.sleep(0.02)
                ran2, waited2 = sched()
                lags.append((t, time.perf_counter() - t - 0.02, ran2 - ran, waited2 - waited))
                sampler.tick = time.perf_counter()
                peak[0] = max(peak[0], rss_mib())

        jobs = [asyncio.ensure_future(keys()), asyncio.ensure_future(ticker())]

        def runs():  # type: ignore[no-untyped-def]
            return [app.tasks.runs.get((h, "serve")) for h in names]

        # "Streaming": once every host's run has started (launching them all is behind us),
        # until the last is READY: the state issue 29's bound is about.
        await wait(lambda: all(r is not None and r.started is not None for r in runs()), 900)
        streaming = time.perf_counter()
        await wait(lambda: all(r is not None and not r.active for r in runs()), timeout=900)
        elapsed = time.perf_counter() - start
        ran_s, waited_s = (b - a for a, b in zip(sched0, sched(), strict=True))
        done.set()
        sampler.stop.set()
        await asyncio.gather(*jobs)
        finished = runs()
        ok = sum(1 for r in finished if r.state == "ok")
        lines = sum(r.received for r in finished)
        bad = [f"{r.host}: {r.state} {r.detail}" for r in finished if r.state != "ok"]
    every = sorted(lat for _, lat in latencies)
    steady = sorted(lat for at, lat in latencies if at >= streaming)
    worst = sorted(lags, key=lambda x: -x[1])[:3]
    # A lag the loop thread spent running is the app's own work; one it spent runnable but
    # waiting for a CPU is the machine's other processes (the N hosts', other users') taking it.
    return {
        "seconds": elapsed,
        "ready": ok,
        "lines": lines,
        "keys": len(every),
        "key_p50": statistics.median(every or [0.0]) * 1000,
        "key_max": max(every or [0.0]) * 1000,
        "lag_max": max([x[1] for x in lags] or [0.0]) * 1000,
        "started_s": streaming - start,
        "ran_s": ran_s,
        "waited_s": waited_s,
        "steady_keys": len(steady),
        "steady_p50": statistics.median(steady or [0.0]) * 1000,
        "steady_max": max(steady or [0.0]) * 1000,
        "steady_lag_max": max([x[1] for x in lags if x[0] >= streaming] or [0.0]) * 1000,
        "worst": ", ".join(
            f"{lag * 1000:.0f} ms at {at - start:.1f} s (ran {ran * 1000:.0f} ms,"
            f" waited for a CPU {waited * 1000:.0f} ms)"
            for at, lag, ran, waited in worst
        ),
        "rss_before": rss_before,
        "rss_peak": peak[0],
        "bad": bad,  # type: ignore[dict-item]
        "stalls": sampler.seen.most_common(4),  # type: ignore[dict-item]
    }


def headless_round(config: Path, n: int) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gpudash", "--config", str(config), "run", "serve", "-y"],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(config.parent)},
        check=False,
    )
    return time.perf_counter() - start, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--speed", type=float, default=5.0, help="engine log lines/s (0: all)")
    parser.add_argument(
        "--shared",
        action="store_true",
        help="leave the hosts on every CPU, with the app (default: the last CPU is theirs)",
    )
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    host_cpus: set[int] = set()
    if not args.shared and len(cpus) > 1:
        host_cpus = {cpus[-1]}
        os.sched_setaffinity(0, set(cpus[:-1]))  # the app and the headless run
    n = args.hosts
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["XDG_STATE_HOME"] = str(root / "state")
        sshds: list[Sshd] = []
        hosts: list[FakeHost] = []
        try:
            while len(hosts) < n:
                folder = root / f"sshd{len(sshds)}"
                folder.mkdir()
                sshd = Sshd(folder)
                sshd.start()
                sshds.append(sshd)
                if host_cpus and sshd.pid is not None:  # its sessions inherit it
                    os.sched_setaffinity(sshd.pid, host_cpus)
                hosts.extend(sshd.hosts)
            hosts = hosts[:n]
            for host in hosts:
                prepare(host, args.speed)
            config = write_config(sshds, hosts, root)
            app = asyncio.run(app_round(config, n))
            stop_engines(hosts)
            for host in hosts:
                prepare(host, args.speed)
            head_s, head_rc = headless_round(config, n)
        finally:
            stop_engines(hosts)
            for sshd in sshds:
                sshd.close()
    s = app["seconds"]
    where = f"hosts on CPU {sorted(host_cpus)}, app on {cpus[:-1]}" if host_cpus else "shared"
    app_what = f"app: y .. every host READY ({int(app['ready'])}/{n} ok)"
    head_what = f"gpudash run serve -y, every host (headless; rc {head_rc})"
    print(
        f"{n} hosts serving at once, engine log at {args.speed:g} lines/s; CPUs: {where}"
        f" ({os.cpu_count()} in all, load average {os.getloadavg()[0]:.1f})"
    )
    print(f"{'what':<52} {'seconds':>8}")
    print(f"{app_what:<52} {s:>8.2f}")
    print(f"{head_what:<52} {head_s:>8.2f}")
    print(
        f"lines reaching the app: {int(app['lines'])} ({app['lines'] / s:,.0f} lines/s);"
        f" app/headless {s / head_s:.2f}x"
    )
    print(
        f"keys from y to the last READY: {int(app['keys'])}, latency p50 {app['key_p50']:.1f} ms,"
        f" max {app['key_max']:.1f} ms; event-loop lag (20 ms timer) max {app['lag_max']:.1f} ms"
        f" (worst: {app['worst']} after y)"
    )
    print(
        f"keys while they stream (every run started, {app['started_s']:.1f} s after y, .. the"
        f" last READY): {int(app['steady_keys'])}, latency p50 {app['steady_p50']:.1f} ms,"
        f" max {app['steady_max']:.1f} ms (target < 100 ms);"
        f" loop lag max {app['steady_lag_max']:.1f} ms"
    )
    print(
        f"the app's loop thread from y to the last READY: ran {app['ran_s']:.2f} s, runnable but"
        f" waiting for a CPU {app['waited_s']:.2f} s (of {s:.2f} s)"
    )
    print(f"app RSS: {app['rss_before']:.0f} MiB before, peak {app['rss_peak']:.0f} MiB")
    for where, count in app["stalls"]:  # type: ignore[union-attr]
        print(f"loop late > 200 ms, sampled {count} x 50 ms in: {where}")
    for line in app["bad"][:5]:  # type: ignore[union-attr]
        print(f"not ready: {line}")
    if app["ready"] != n or head_rc != 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
