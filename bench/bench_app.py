"""How fast the app is, measured on the installed `gpudash` in a real tmux pane.

    .venv/bin/python -m bench.bench_app [--runs N] [--local-only] [--app-path PATH]

Prints one table:
  first frame        start of `gpudash` to the first screen with the host list on it
  panels filled      start to every section of one host on screen ("ready"), beside
                     headless `gpudash probe` of the same host in the same run; for this
                     machine (local transport) and for a host behind the test sshd
                     (tests/support/sshd.py, the H200 capture as its GPU tools)
  headless           `gpudash probe` of that host, timed twice: in a pane like the app
                     (started by tmux, its end seen by the same polling: the gap is taken
                     against this one, so the harness's own cost, 40-48 ms on the 2-vCPU VM
                     for a command that prints at once, is on both sides), and as a plain
                     subprocess (no harness at all)
  idle CPU           CPU use of the app with 20 hosts settled and no refresh, over 5 s
  bare Textual       the baseline: start to first frame of a Textual app of one line and a
                     footer (BARE_APP), the same interpreter, pane and polling, interleaved
                     with the runs above; the floor any Textual app starts from here

The local host is this machine over the local transport, with PATH set to the system's
directories (SYSTEM_PATH) for the app and the headless probe alike: a pyenv shim on PATH runs
hundreds of bash processes per `python --version`, and its spread would swamp the app's own
cost. `--app-path` replaces it where the GPU tools live elsewhere (a real GPU machine's
/usr/local/nvidia/bin); `--local-only` skips the sshd host (a machine without openssh-server).
The 20 idle hosts replay the saved captures in tests/fixtures/saved, so nothing but the
app itself uses CPU.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAVED = ROOT / "tests" / "fixtures" / "saved"
GPUDASH = Path(sys.executable).with_name("gpudash")
NET = 'network_targets = ["http://127.0.0.1:9/"]\n'
TICKS = os.sysconf("SC_CLK_TCK")
from tests.support import fakegpu  # noqa: E402
from tests.support.sshd import Sshd  # noqa: E402

BARE_APP = """
from textual.app import App
from textual.widgets import Footer, Static

class Bare(App):
    def compose(self):
        yield Static("loopback")
        yield Footer()

Bare().run()
"""

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENV = {**os.environ, "TERM": "xterm-256color", "PATH": SYSTEM_PATH}

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (("--runs", "1", "--idle-s", "0.5"),)


class Pane:
    def __init__(self, root: Path) -> None:
        self.sock = root / "tmux.sock"

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", str(self.sock), *args], capture_output=True, text=True
        ).stdout

    def start(self, config: Path) -> float:
        return self.start_command(f"{GPUDASH} --config {config}")

    def start_command(self, command: str) -> float:
        t0 = time.perf_counter()
        subprocess.run(
            [
                "tmux",
                "-S",
                str(self.sock),
                "new-session",
                "-d",
                "-s",
                "b",
                "-x",
                "100",
                "-y",
                "30",
                command,
            ],
            env=ENV,
            check=True,
        )
        return t0

    def wait(self, condition, timeout: float = 60.0) -> float:  # type: ignore[no-untyped-def]
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if condition(self.tmux("capture-pane", "-p", "-t", "b")):
                return time.perf_counter()
            time.sleep(0.02)  # polling tmux faster steals the CPU the app needs on small boxes
        raise TimeoutError("screen never matched")

    def pid(self) -> int:
        return int(self.tmux("display", "-p", "-t", "b", "#{pane_pid}").strip())

    def stop(self) -> None:
        self.tmux("kill-server")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def time_in_pane(root: Path, command: str, seen: str) -> float:
    """Start of `command` in a new pane (its tmux server's socket in `root`) to `seen` on
    its screen."""
    root.mkdir(parents=True, exist_ok=True)
    pane = Pane(root)
    t0 = pane.start_command(command)
    try:
        return pane.wait(lambda s: seen in s) - t0
    finally:
        pane.stop()


def bare_frame(root: Path) -> float:
    """Start to first frame of BARE_APP (written to `root`)."""
    root.mkdir(parents=True, exist_ok=True)
    script = root / "bare.py"
    script.write_text(BARE_APP)
    return time_in_pane(root, f"{sys.executable} {script}", "loopback")


HEADLESS_DONE = "headless-probe-done"


def fill_times(
    root: Path, config: Path, runs: int, bare: list[float]
) -> tuple[list[float], list[float], list[float], list[float]]:
    """First frame, panels filled (both from the start of `gpudash`), the headless probe of
    the same config in a pane and as a plain subprocess, `runs` times each, interleaved with
    a bare Textual app's first frame (appended to `bare`)."""
    root.mkdir()
    first, filled, in_pane, headless = [], [], [], []
    for i in range(runs):
        bare.append(bare_frame(root / f"bare{i}"))
        pane = Pane(root / f"r{i}")
        pane.sock.parent.mkdir()
        t0 = pane.start(config)
        first.append(pane.wait(lambda s: "loopback" in s) - t0)
        # the host list says "probed N s ago" once the host's round ended
        filled.append(pane.wait(lambda s: "probed " in s and "waiting for" not in s) - t0)
        pane.stop()
        probe = f"{GPUDASH} --config {config} probe >/dev/null; echo {HEADLESS_DONE}; sleep 60"
        in_pane.append(time_in_pane(root / f"h{i}", probe, HEADLESS_DONE))
        t0 = time.perf_counter()
        subprocess.run(
            [str(GPUDASH), "--config", str(config), "probe"], capture_output=True, env=ENV
        )
        headless.append(time.perf_counter() - t0)
    return first, filled, in_pane, headless


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--local-only", action="store_true", help="no sshd host")
    parser.add_argument("--app-path", default=SYSTEM_PATH, help="PATH for gpudash")
    parser.add_argument("--idle-s", type=float, default=5.0, help="seconds the idle CPU is read")
    args = parser.parse_args()
    runs = args.runs
    ENV["PATH"] = args.app_path
    work = Path(tempfile.mkdtemp(prefix="gpudash-bench-"))
    (work / "sshd").mkdir()
    sshd = None if args.local_only else Sshd(work / "sshd")
    try:
        local = work / "local.toml"
        local.write_text(f'[hosts.loopback]\ntransport = "local"\n{NET}')
        configs = [("local", local)]
        if sshd is not None:
            sshd.start()
            host = sshd.hosts[0]
            fakegpu.install(host.bin_dir, ROOT / "tests" / "fixtures" / "h200-1x")
            remote = work / "ssh.toml"
            remote.write_text(sshd.host_toml(host, "loopback") + NET)
            configs.append(("ssh", remote))
        bare: list[float] = []
        measured = {name: fill_times(work / name, config, runs, bare) for name, config in configs}
        many = work / "twenty.toml"
        names = sorted(p.name for p in SAVED.iterdir() if (p / "meta.json").exists())
        many.write_text(
            "".join(
                f'[hosts.h{i:02d}]\ntransport = "replay"\n'
                f'replay_dir = "{SAVED / names[i % len(names)]}"\n'
                for i in range(20)
            )
        )
        pane = Pane(work / "idle")
        pane.sock.parent.mkdir()
        pane.start(many)
        pane.wait(lambda s: "h00" in s and "probing" not in s and "connecting" not in s)
        time.sleep(1.0)
        pid = pane.pid()
        c0, w0 = cpu_seconds(pid), time.perf_counter()
        time.sleep(args.idle_s)
        idle = (cpu_seconds(pid) - c0) / (time.perf_counter() - w0) * 100
        pane.stop()
    finally:
        if sshd is not None:
            sshd.close()
        shutil.rmtree(work, ignore_errors=True)

    def ms(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1000:7.0f} ms (min {min(xs) * 1000:.0f})"

    print(f"gpudash app benchmark, {runs} runs, median (min), {os.cpu_count()} CPUs")
    for name, what in (("local", "this machine, local transport"), ("ssh", "an sshd host")):
        if name not in measured:
            continue
        first, filled, in_pane, headless = measured[name]
        gap = statistics.median(filled) - statistics.median(in_pane)
        print(f"  1 host, {what}")
        print(f"    {'first frame':<34}{ms(first)}")
        print(f"    {'panels filled':<34}{ms(filled)}")
        print(f"    {'headless gpudash probe, in a pane':<34}{ms(in_pane)}")
        print(f"    {'app minus headless (both in panes)':<34}{gap * 1000:7.0f} ms")
        print(f"    {'headless, plain subprocess':<34}{ms(headless)}")
    print(f"  {'idle CPU, 20 hosts, no refresh':<34}{idle:7.2f} %")
    ratio = statistics.median(measured["local"][0]) / statistics.median(bare)
    print(f"  {'bare Textual app: first frame':<34}{ms(bare)}")
    print(f"  {'first frame, local / bare Textual':<34}{ratio:7.2f}×")


if __name__ == "__main__":
    main()
