"""One host, cold: `gpudash probe --json` against OpenSSH's one-liner, and where the time goes.

    python -m bench.bench_probe_split [--rtts 0 50] [--rounds 15] [--trace-rounds 5]

The host is tests/support/netrig.py's (its own namespace, OpenSSH sshd, the fake H200 tools;
loopback and a userspace relay without root). Both contenders are whole processes, cold, run
alternately (`--rounds` pairs, so load drift hits both alike); the figures are medians:

  gpudash   `python -m gpudash probe --json --config C`, as bench_fleet runs it
  openssh   `ssh -o BatchMode=yes ... HOST /bin/sh -s < script`, the very script gpudash builds

Wall time, CPU time (user + system of the process and its children, from wait4) and the ratio
gpudash/openssh, per RTT. Before measuring, gpudash's bytecode is compiled (as `pip install`
does): with PYTHONDONTWRITEBYTECODE=1 in the environment and no __pycache__, every run would
compile ~100 modules from source, which no installed gpudash does.

The split (`--trace-rounds`, needs strace): each contender again under `strace -f
--seccomp-bpf`, tracing only the system calls that mark a phase, so the traced process runs
at nearly full speed (the split's total is still a little above the untraced wall). Phases,
from the process's exec:

  start       the interpreter and site, up to the first gpudash module read
  cli+config  gpudash's command line, its imports and the config, up to the TCP connect
  asyncssh    asyncssh's import (the connect completes meanwhile), up to the client's version
  handshake   key exchange, user auth, channel open and exec, up to the script's first byte
  host        the script on the host: from its first byte sent to the last byte received
  parse       the last section's parse and the results, up to the first byte printed
  output      printing, first byte to last
  exit        the last byte printed to the process's end

OpenSSH's rows read the same marks (`ssh` has no interpreter: its start is the dynamic
loader and its config; it prints as it receives, so its parse and output are ~0).
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from gpudash.config.load import parse_config  # noqa: E402
from gpudash.host_probe import plan_for  # noqa: E402
from gpudash.probe.script import build_script  # noqa: E402
from tests.support.netrig import NetRig  # noqa: E402

SMOKE: tuple[tuple[str, ...], ...] = (("--rtts", "0", "--rounds", "1", "--trace-rounds", "1"),)
"""The smoke size (tests/perf/test_bench_smoke.py): one pair and one traced pair, RTT 0."""

PHASES = ("start", "cli+config", "asyncssh", "handshake", "host", "parse", "output", "exit")
_SCRIPT_BYTES = (
    8192  # the first send at least this large is the script (the handshake's are < 2 KiB)
)
_LINE = re.compile(r"^(\d+)\s+([\d.]+)\s+(\w+)\((.*)$")
_RESULT = re.compile(r"= (-?\d+)")


@dataclass
class Run:
    wall: float
    cpu: float


def run(cmd: list[str], stdin: Path | None = None) -> Run:
    """`cmd` to its end: wall and CPU seconds (wait4: the process and its reaped children)."""
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as feed:
        proc = subprocess.Popen(cmd, stdin=feed, stdout=subprocess.DEVNULL, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return Run(took, usage.ru_utime + usage.ru_stime)


class Pair:
    """The two commands for one rig host."""

    def __init__(self, rig: NetRig, work: Path) -> None:
        host = rig.hosts[0]
        self.config = work / "config.toml"
        text = rig.config_toml(connect_timeout=30, probe_timeout=120)
        self.config.write_text(text)
        self.script = work / "h0.sh"
        self.script.write_text(
            build_script(plan_for(parse_config(text, str(self.config)).hosts[0]))
        )
        self.gpudash = [
            sys.executable,
            "-m",
            "gpudash",
            "probe",
            "--json",
            "--config",
            str(self.config),
        ]
        self.openssh = [
            "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={rig.known_hosts}", "-i", str(rig.client_key),
            "-p", str(host.port), f"{rig.user}@{host.address}", "/bin/sh", "-s",
        ]  # fmt: skip


def split(trace: str) -> dict[str, float]:
    """The phases of one strace log (see the module docstring); a phase not seen is absent."""
    marks: dict[str, float] = {}
    sock = main = None
    for line in trace.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        pid, t, call, rest = int(m[1]), float(m[2]), m[3], m[4]
        result = _RESULT.search(rest)
        size = int(result[1]) if result else 0
        if main is None:
            main, marks["exec"] = pid, t
        fd = rest.split(",", 1)[0]
        if call == "openat" and "/gpudash/" in rest and size >= 0:
            marks.setdefault("start", t)
        elif call == "connect" and "AF_INET" in rest and sock is None:
            sock, marks["cli+config"] = fd, t
        elif sock is not None and fd == sock and call in ("sendto", "write") and size > 0:
            marks.setdefault("asyncssh", t)
            if size >= _SCRIPT_BYTES:
                marks.setdefault("handshake", t)
        elif sock is not None and fd == sock and call in ("recvfrom", "read") and size > 0:
            if "handshake" in marks:
                marks["host"] = t
        elif call == "write" and fd == "1" and size > 0:
            marks.setdefault("parse", t)
            marks["output"] = t
        elif call == "exit_group" and pid == main:
            marks["exit"] = t
    if "parse" not in marks and "host" in marks:  # ssh printed as it received
        marks["parse"] = marks["output"] = marks["host"]
    if "start" not in marks:  # not Python: from the exec
        marks["start"] = marks.get("exec", 0.0)
    out, last = {}, marks.get("exec", 0.0)
    for phase in PHASES:
        if phase in marks:
            out[phase] = max(0.0, marks[phase] - last)
            last = marks[phase]
    return out


def traced(cmd: list[str], stdin: Path | None, log: Path) -> dict[str, float]:
    calls = "execve,openat,connect,sendto,recvfrom,read,write,exit_group"
    strace = ["strace", "-f", "--seccomp-bpf", "-ttt", "-e", f"trace={calls}", "-e", "signal=none"]
    run([*strace, "-o", str(log), *cmd], stdin)
    return split(log.read_text(errors="replace"))


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure(pair: Pair, rounds: int, trace_rounds: int, work: Path) -> dict[str, object]:
    g: list[Run] = []
    o: list[Run] = []
    for _ in range(rounds):  # interleaved
        g.append(run(pair.gpudash))
        o.append(run(pair.openssh, pair.script))
    phases: dict[str, dict[str, list[float]]] = {"gpudash": {}, "openssh": {}}
    if trace_rounds and shutil.which("strace"):
        for i in range(trace_rounds):
            for name, cmd, feed in (
                ("gpudash", pair.gpudash, None),
                ("openssh", pair.openssh, pair.script),
            ):
                for phase, took in traced(cmd, feed, work / f"{name}{i}.strace").items():
                    phases[name].setdefault(phase, []).append(took)
    return {
        "gpudash": g,
        "openssh": o,
        "ratios": [a.wall / b.wall for a, b in zip(g, o, strict=True)],
        "phases": phases,
    }


def report(rtt: int, res: dict) -> None:
    g, o = res["gpudash"], res["openssh"]
    gw, ow = _med([r.wall for r in g]), _med([r.wall for r in o])
    gc, oc = _med([r.cpu for r in g]), _med([r.cpu for r in o])
    print(f"\nRTT {rtt} ms, {len(g)} interleaved pairs, load average {os.getloadavg()[0]:.1f}")
    print(
        f"  wall  gpudash {gw * 1000:6.0f} ms   openssh {ow * 1000:6.0f} ms   ratio {gw / ow:.2f}x"
    )
    print(f"        median of the pairs' ratios {_med(res['ratios']):.2f}x")
    print(f"  cpu   gpudash {gc * 1000:6.0f} ms   openssh {oc * 1000:6.0f} ms")
    phases = res["phases"]
    if not phases["gpudash"]:
        return
    n = len(next(iter(phases["gpudash"].values())))
    print(f"  split (ms, medians of {n} traced runs each)")
    print("    phase        gpudash  openssh")
    for phase in PHASES:
        a, b = _med(phases["gpudash"].get(phase, [])), _med(phases["openssh"].get(phase, []))
        print(f"    {phase:11} {a * 1000:8.0f} {b * 1000:8.0f}")
    total = [sum(_med(phases[c].get(p, [])) for p in PHASES) for c in ("gpudash", "openssh")]
    print(f"    {'sum':11} {total[0] * 1000:8.0f} {total[1] * 1000:8.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rtts", type=int, nargs="+", default=[0, 50])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--trace-rounds", type=int, default=5)
    args = parser.parse_args(argv)
    compileall.compile_dir(ROOT / "gpudash", quiet=1)
    print(
        "environment: "
        + " ".join(
            f"{k}={os.environ[k]}"
            for k in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")
            if k in os.environ
        )
    )
    with (
        tempfile.TemporaryDirectory(prefix="gpudash-bench-split-") as tmp,
        NetRig(1, Path(tmp) / "rig") as rig,
    ):
        print(f"rig: {rig.mode}, delay by {'netem' if rig.netem else 'userspace relay'}")
        pair = Pair(rig, Path(tmp))
        run(pair.gpudash)  # one untimed run each: the page cache, the host's first login
        run(pair.openssh, pair.script)
        for rtt in args.rtts:
            rig.set_link(rig.hosts[0], delay_ms=rtt)
            report(rtt, measure(pair, args.rounds, args.trace_rounds, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
