"""Scale: `gpudash probe --json` over 100 and 1000 SSH hosts, and the app with 1000 hosts.

    .venv/bin/python -m bench.bench_scale probe 100 1000 [--concurrency 64 --max-handshakes 16]
    .venv/bin/python -m bench.bench_scale app 1000

probe  N hosts are N loopback ports served by real OpenSSH sshd daemons, 16 ports each (sshd
       listens on at most 16 sockets), hosts spread round-robin over the daemons so that,
       as with real machines, concurrent handshakes land on different servers. sshd runs
       with its defaults for MaxStartups (10:30:100) and MaxSessions (10). Every host runs
       the full probe with the fake H200 tools (tests/support/fakegpu.py). The whole `gpudash probe
       --json` process runs under /usr/bin/time -v: wall time and peak RSS. Counted: hosts
       ready, hosts failed (with reasons), and sshd's own log lines about refused or dropped
       connections (MaxStartups, MaxSessions).
app    The app (Pilot, headless, in a process of its own) with N replay hosts of the saved
       H200 capture: time to every host settled, then the latency of keys (down/up in the
       host list; `f`, then down/up and sort in the fleet view): from the key press until
       the app has processed it and repainted. Peak RSS of that process (VmHWM).

Targets (issue 6): probe completes with bounded concurrency, no handshake failure caused by
gpudash, peak RSS < 200 MB; app keys answered within 100 ms, RSS < 250 MB.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from tests.support.manyhosts import LoopbackFleet  # noqa: E402

SAVED_H200 = ROOT / "tests" / "fixtures" / "saved" / "h200-1x"

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (
    ("probe", "4", "--concurrency", "4", "--max-handshakes", "4"),
    ("app", "4"),
)


def timed(cmd: list[str], **kw: object) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """Run under /usr/bin/time -v: the result, wall seconds, peak RSS in KiB."""
    report = Path(tempfile.mktemp(prefix="gpudash-time-"))
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", "-o", str(report), *cmd],
        capture_output=True,
        text=True,
        **kw,  # type: ignore[call-overload]
    )
    wall = time.perf_counter() - start
    text = report.read_text()
    report.unlink()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))  # type: ignore[union-attr]
    return done, wall, rss


def bench_probe(n: int, concurrency: int, max_handshakes: int) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix=f"gpudash-scale{n}-"))
    try:
        with LoopbackFleet(n, root) as fleet:
            config = fleet.config(
                root / "c.toml", concurrency=concurrency, max_handshakes=max_handshakes
            )
            done, wall, rss = timed(
                [sys.executable, "-m", "gpudash", "probe", "--json", "--config", str(config)],
                timeout=900,
            )
            try:
                hosts = json.loads(done.stdout)["hosts"]
            except json.JSONDecodeError:
                raise SystemExit(f"probe printed no JSON: {done.stderr[-2000:]}") from None
            ready = sum(h["state"] == "ready" for h in hosts)
            reasons = Counter(h["error"] for h in hosts if h["state"] != "ready")
            incomplete = sum(
                1
                for h in hosts
                if h["state"] == "ready" and any(s["error"] for s in h["sections"].values())
            )
            return {
                "hosts": n,
                "daemons": len(fleet.procs),
                "concurrency": concurrency,
                "max_handshakes": max_handshakes,
                "wall_s": round(wall, 1),
                "peak_rss_mb": round(rss / 1024, 1),
                "ready": ready,
                "failed": dict(reasons),
                "sections_with_errors": incomplete,
                "sshd_refusals": dict(fleet.server_refusals()),
            }
    finally:
        shutil.rmtree(root, ignore_errors=True)


APP_DRIVER = r"""
import asyncio, json, statistics, sys, time
from pathlib import Path
from gpudash.config.model import Config, HostConfig
from gpudash.ui import create_app

n, saved, size = int(sys.argv[1]), sys.argv[2], (int(sys.argv[3]), int(sys.argv[4]))
hosts = tuple(
    HostConfig(name=f"h{i:04d}", transport="replay", replay_dir=saved, tags=("h200",))
    for i in range(n)
)

def hwm_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

async def main():
    app = create_app(Config(None, hosts))
    out = {}
    t0 = time.perf_counter()
    async with app.run_test(size=size) as pilot:
        while not (len(app.results) == n
                   and all(r.elapsed_s is not None for r in app.results.values())
                   and not app.probing.busy):
            await pilot.pause(0.05)
        await pilot.pause()
        out["settled_s"] = round(time.perf_counter() - t0, 2)

        from textual import events

        async def key(k, done):
            # Send one key as a terminal would; wait until done() holds and every widget
            # has processed what the key caused; then paint one full frame.
            start = time.perf_counter()
            app._driver.send_message(events.Key(k, None))
            deadline = time.perf_counter() + 10
            while not done():
                if time.perf_counter() > deadline:
                    raise SystemExit(f"key {k!r} was not answered within 10 s")
                await asyncio.sleep(0.0005)
            await pilot._wait_for_screen()
            app.screen._compositor.render_strips(app.screen.size)
            return (time.perf_counter() - start) * 1000

        hosts_list = app.query_one("#hosts")
        host_keys = []
        for k in ["down"] * 20 + ["up"] * 20:
            want = (hosts_list.highlighted + (1 if k == "down" else -1)) % n  # it wraps
            host_keys.append(await key(k, lambda w=want: hosts_list.highlighted == w
                                       and app.selected == hosts_list.highlighted_host))
        fleet_open = await key("f", lambda: type(app.screen).__name__ == "FleetScreen")
        table = app.screen.query_one("#fleet-table")
        fleet_keys = []
        for k in ["down"] * 20 + ["up"] * 20:
            want = min(n - 1, max(0, table.cursor_row + (1 if k == "down" else -1)))
            fleet_keys.append(await key(k, lambda w=want: table.cursor_row == w))
        sort_ms = await key("o", lambda: app.screen._sort == 0)  # set once the sort is done
        out["host_list_key_ms"] = {"median": round(statistics.median(host_keys), 1),
                                   "max": round(max(host_keys), 1)}
        out["fleet_open_ms"] = round(fleet_open, 1)
        out["fleet_key_ms"] = {"median": round(statistics.median(fleet_keys), 1),
                               "max": round(max(fleet_keys), 1)}
        out["fleet_sort_ms"] = round(sort_ms, 1)
        out["peak_rss_mb"] = round(hwm_mb(), 1)
        await pilot.press("q")
    print(json.dumps(out))

asyncio.run(main())
"""


def bench_app(n: int) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", APP_DRIVER, str(n), str(SAVED_H200), "160", "50"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"app driver failed: {done.stderr[-3000:]}")
    return {"hosts": n, **json.loads(done.stdout.strip().splitlines()[-1])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("probe", "app"))
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-handshakes", type=int, default=16)
    args = parser.parse_args(argv)
    for n in args.sizes:
        if args.what == "probe":
            row = bench_probe(n, args.concurrency, args.max_handshakes)
        else:
            row = bench_app(n)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
