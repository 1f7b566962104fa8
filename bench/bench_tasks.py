"""Benchmark: task log streaming throughput, gpudash's runner against a plain OpenSSH reader.

Run:  .venv/bin/python -m bench.bench_tasks [--lines 200000] [--rounds 3]

A task prints --lines numbered lines as fast as it can into its job log on a test-sshd host
(tests/support/sshd.py). Measured, each a median of --rounds:
- gpudash: `run_task` over SshTransport, from launch to TaskFinished, every line through the
  line assembler, the masker and the local log file (what the app's log pane would receive);
- baseline: `ssh host cat LOG` of the same finished log (the raw transfer, no per-line work).
Memory: the runner holds no log beyond the line it is assembling (the full log is on disk);
peak RSS is printed. The UI ring buffer is the app's, not measured here.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from gpudash.tasks.events import TaskFinished, TaskOutput  # noqa: E402
from gpudash.tasks.prepare import prepare  # noqa: E402
from gpudash.tasks.runner import run_task  # noqa: E402
from gpudash.tasks.spec import load_tasks  # noqa: E402
from gpudash.transport.ssh import SshPool  # noqa: E402
from tests.support.sshd import Sshd  # noqa: E402

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (("--lines", "2000", "--rounds", "1"),)


async def gpudash_round(sshd: Sshd, lines: int) -> tuple[float, int]:
    body = f"seq 1 {lines} | sed 's/^/log line number /'\n"
    spec = load_tasks({"flood": {"title": "flood", "kind": "script", "run": body}})["flood"]
    pool = SshPool([])
    try:
        transport = pool.transport(sshd.host_config(sshd.hosts[0]))
        await transport.connect()
        start = time.perf_counter()
        got = 0
        async for event in run_task("h0", transport, prepare(spec)):
            if isinstance(event, TaskOutput):
                got += len(event.lines)
            elif isinstance(event, TaskFinished):
                assert event.rc == 0, event
        return time.perf_counter() - start, got
    finally:
        await pool.close()


def openssh_round(sshd: Sshd) -> float:
    host = sshd.hosts[0]
    cmd = sshd.ssh_argv(host, "cat", str(host.home / ".cache/gpudash/jobs/flood/log"))
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp))
        sshd.start()
        try:
            ours, base = [], []
            for _ in range(args.rounds):
                seconds, got = asyncio.run(gpudash_round(sshd, args.lines))
                assert got == args.lines, (got, args.lines)
                ours.append(seconds)
                base.append(openssh_round(sshd))
        finally:
            sshd.close()
    o, b = statistics.median(ours), statistics.median(base)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.lines} lines, median of {args.rounds}")
    print(f"gpudash run_task (launch..finished): {o:.2f} s = {args.lines / o:,.0f} lines/s")
    print(f"ssh cat of the finished log:         {b:.2f} s = {args.lines / b:,.0f} lines/s")
    print(f"peak RSS of the gpudash process: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
