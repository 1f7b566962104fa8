"""Benchmark: `gpudash probe --json` against fake GPU hosts on loopback, beside a baseline of
plain parallel OpenSSH (`ssh host /bin/sh -s < same-script`, one per host, all at once).

Run:  .venv/bin/python -m bench.bench_probe [--rounds 5] [--hosts 20]

Both sides run the exact probe script gpudash builds for the host, against the same test sshd
(tests/support/sshd.py) with fake `nvidia-smi`/`nvcc` printing the real H200 captures. Figures are
medians of --rounds runs, measured as whole processes (interpreter start-up included).
Printed: 1 host vs "one SSH connect + the script's own run time + 50 ms"; --hosts vs the
parallel OpenSSH baseline; and, from the streaming text output, when the first section line
of a host appeared relative to its last one.
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from gpudash.config.load import parse_config  # noqa: E402
from gpudash.host_probe import plan_for  # noqa: E402
from gpudash.probe.script import build_script  # noqa: E402
from tests.support import fakegpu  # noqa: E402
from tests.support.sshd import Sshd  # noqa: E402

GPUDASH = [sys.executable, "-m", "gpudash"]

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (("--rounds", "1", "--hosts", "3"),)


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    """A network target that answers after 0.3 s: the probe's slowest section."""

    def do_GET(self) -> None:
        time.sleep(0.3)
        self.send_response(200)
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        pass


def write_config(path: Path, sshd: Sshd, n: int, target: str) -> None:
    lines = [
        "[defaults]",
        f'user = "{sshd.user}"',
        f'identity_file = "{sshd.client_key}"',
        f'known_hosts = "{sshd.known_hosts}"',
        'address = "127.0.0.1"',
        f'network_targets = ["{target}"]',
        "connect_timeout = 10",
    ]
    for i in range(n):
        host = sshd.hosts[i % len(sshd.hosts)]
        lines += [f"[hosts.fake{i:02d}]", f"port = {host.port}"]
    path.write_text("\n".join(lines) + "\n")


def median_s(cmd: list[str], rounds: int, **kw: object) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def in_process_s(config_path: Path, rounds: int) -> float:
    """`probe_command` inside this process: the probe itself, without interpreter start-up."""
    import asyncio

    from gpudash.cli.probe import probe_command

    config = parse_config(config_path.read_text(), str(config_path))
    times = []
    with open(os.devnull, "w") as sink:
        for _ in range(rounds):
            start = time.perf_counter()
            asyncio.run(probe_command(config, None, as_json=True, save=None, out=sink))
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def ssh_cmd(sshd: Sshd, port: int, *remote: str) -> list[str]:
    return [
        "ssh",
        "-q",
        "-p",
        str(port),
        "-i",
        str(sshd.client_key),
        "-o",
        f"UserKnownHostsFile={sshd.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-F",
        "/dev/null",
        f"{sshd.user}@127.0.0.1",
        *remote,
    ]


def parallel_openssh_s(sshd: Sshd, config_path: Path, n: int, rounds: int) -> float:
    config = parse_config(config_path.read_text(), str(config_path))
    scripts = [build_script(plan_for(h)).encode() for h in config.hosts[:n]]
    ports = [h.port for h in config.hosts[:n]]
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        procs = [
            subprocess.Popen(
                ssh_cmd(sshd, p, "/bin/sh -s"), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
            )
            for p in ports
        ]
        for proc, script in zip(procs, scripts, strict=True):
            proc.stdin.write(script)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        for proc in procs:
            proc.wait()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def script_alone_s(sshd: Sshd, config_path: Path, rounds: int) -> float:
    """The probe script's own run time on the host, without SSH."""
    config = parse_config(config_path.read_text(), str(config_path))
    script = build_script(plan_for(config.hosts[0])).encode()
    host = sshd.hosts[0]
    env = {
        **os.environ,
        "PATH": f"{host.bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(host.home),
    }
    return median_s(["/bin/sh", "-s"], rounds, input=script, env=env)


def streaming_gap(config_path: Path) -> tuple[float, float]:
    """Seconds from start to the first and to the last section line of one host."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*GPUDASH, "probe", "--config", str(config_path), "fake00"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    stamps = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if "│" in line:
            stamps.append(time.perf_counter() - start)
    proc.wait()
    return stamps[0], stamps[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hosts", type=int, default=20, help="hosts of the parallel case")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = f"http://127.0.0.1:{server.server_address[1]}/"
    with tempfile.TemporaryDirectory(prefix="gpudash-bench-") as tmp:
        root = Path(tmp)
        (root / "sshd").mkdir()
        sshd = Sshd(root / "sshd")
        sshd.start()
        try:
            for host in sshd.hosts:
                fakegpu.install(host.bin_dir, ROOT / "tests" / "fixtures" / "h200-1x")
            env = {**os.environ, "HOME": str(root / "home")}
            rows = []
            cfg1, many = root / "one.toml", root / "many.toml"
            write_config(cfg1, sshd, 1, target)
            write_config(many, sshd, args.hosts, target)
            connect = median_s(ssh_cmd(sshd, sshd.hosts[0].port, "true"), args.rounds)
            script = script_alone_s(sshd, cfg1, args.rounds)
            one = median_s(
                [*GPUDASH, "probe", "--json", "--config", str(cfg1)], args.rounds, env=env
            )
            budget = connect + script + 0.050
            inproc = in_process_s(cfg1, args.rounds)
            rows.append(("1 host: in-process probe", inproc, budget, "same budget"))
            rows.append(
                (
                    "1 host: gpudash probe --json",
                    one,
                    budget,
                    f"ssh connect {connect * 1000:.0f} ms + script {script * 1000:.0f} ms + 50 ms",
                )
            )
            parallel = median_s(
                [*GPUDASH, "probe", "--json", "--config", str(many)], args.rounds, env=env
            )
            base = parallel_openssh_s(sshd, many, args.hosts, args.rounds)
            rows.append(
                (
                    f"{args.hosts} hosts: gpudash probe --json",
                    parallel,
                    base * 1.5,
                    f"parallel OpenSSH {base * 1000:.0f} ms x 1.5",
                )
            )
            first, last = streaming_gap(cfg1)
            print(f"{'case':34} {'gpudash':>9} {'target':>9}  ratio  basis")
            for name, value, goal, basis in rows:
                print(
                    f"{name:34} {value * 1000:7.0f}ms {goal * 1000:7.0f}ms  "
                    f"{value / goal:5.2f}  {basis}"
                )
            print(
                f"streaming: first section line at {first * 1000:.0f} ms, "
                f"last at {last * 1000:.0f} ms (slowest section: a 300 ms HTTP target)"
            )
        finally:
            sshd.close()
            server.shutdown()


if __name__ == "__main__":
    main()
