"""One host, cold: `gpudash probe --json` against OpenSSH's one-liner, and where the time goes.

    python -m bench.bench_probe_split [--rtts 0 50] [--rounds 15] [--trace-rounds 5]
                                      [--against DIR]   # DIR: another checkout, e.g. main

The host is tests/support/netrig.py's (its own namespace, OpenSSH sshd, the fake H200 tools;
loopback and a userspace relay without root). Both contenders are whole processes, cold, run
alternately (`--rounds` pairs, so load drift hits both alike); the figures are medians:

  gpudash   `python -m gpudash probe --json --config C`, as bench_fleet runs it
  openssh   `ssh -o BatchMode=yes ... HOST /bin/sh -s < script`, the very script gpudash builds
  gpudash@DIR  with --against: the same command with DIR's gpudash first on the path (A/B)

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


@dataclass
class Contender:
    name: str
    cmd: list[str]
    stdin: Path | None = None
    tree: Path | None = None  # another checkout's gpudash (`--against`), first on the path


def run(cmd: list[str], stdin: Path | None = None, tree: Path | None = None) -> Run:
    """`cmd` to its end: wall and CPU seconds (wait4: the process and its reaped children)."""
    env = os.environ.copy()
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as feed:
        # `-m` puts the working directory first on sys.path: the tree's own, or PYTHONPATH
        # would not decide which gpudash runs.
        proc = subprocess.Popen(
            cmd, stdin=feed, stdout=subprocess.DEVNULL, cwd=tree or ROOT, env=env
        )
        _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return Run(took, usage.ru_utime + usage.ru_stime)


def contenders(rig: NetRig, work: Path, against: Path | None) -> list[Contender]:
    """gpudash (this tree), gpudash from `against` when given, and OpenSSH, on rig host 0."""
    host = rig.hosts[0]
    config = work / "config.toml"
    text = rig.config_toml(connect_timeout=30, probe_timeout=120)
    config.write_text(text)
    script = work / "h0.sh"
    script.write_text(build_script(plan_for(parse_config(text, str(config)).hosts[0])))
    probe = [sys.executable, "-m", "gpudash", "probe", "--json", "--config", str(config)]
    ssh = [
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={rig.known_hosts}", "-i", str(rig.client_key),
        "-p", str(host.port), f"{rig.user}@{host.address}", "/bin/sh", "-s",
    ]  # fmt: skip
    out = [Contender("gpudash", probe)]
    if against is not None:
        out.append(Contender(f"gpudash@{against.name}", probe, tree=against))
    return [*out, Contender("openssh", ssh, stdin=script)]


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


def traced(c: Contender, log: Path) -> dict[str, float]:
    calls = "execve,openat,connect,sendto,recvfrom,read,write,exit_group"
    strace = ["strace", "-f", "--seccomp-bpf", "-ttt", "-e", f"trace={calls}", "-e", "signal=none"]
    run([*strace, "-o", str(log), *c.cmd], c.stdin, c.tree)
    return split(log.read_text(errors="replace"))


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure(cs: list[Contender], rounds: int, trace_rounds: int, work: Path) -> dict:
    runs: dict[str, list[Run]] = {c.name: [] for c in cs}
    for _ in range(rounds):  # interleaved: load drift hits every contender alike
        for c in cs:
            runs[c.name].append(run(c.cmd, c.stdin, c.tree))
    phases: dict[str, dict[str, list[float]]] = {c.name: {} for c in cs}
    if trace_rounds and shutil.which("strace"):
        for i in range(trace_rounds):
            for c in cs:
                for phase, took in traced(c, work / f"trace{i}.strace").items():
                    phases[c.name].setdefault(phase, []).append(took)
    return {"runs": runs, "phases": phases}


def report(rtt: int, cs: list[Contender], res: dict) -> None:
    runs, phases = res["runs"], res["phases"]
    base = cs[-1].name  # openssh
    n = len(runs[base])
    print(f"\nRTT {rtt} ms, {n} interleaved rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"  {'':18} {'wall ms':>8} {'cpu ms':>8} {'wall/openssh':>13} {'median of rounds':>17}")
    for c in cs:
        wall, cpu = _med([r.wall for r in runs[c.name]]), _med([r.cpu for r in runs[c.name]])
        ratio = wall / _med([r.wall for r in runs[base]])
        paired = _med([a.wall / b.wall for a, b in zip(runs[c.name], runs[base], strict=True)])
        print(f"  {c.name:18} {wall * 1000:8.0f} {cpu * 1000:8.0f} {ratio:12.2f}x {paired:16.2f}x")
    if not phases[base]:
        return
    traces = len(next(iter(phases[base].values())))
    print(f"  split, ms (medians of {traces} traced runs each; see the docstring for the phases)")
    print("    " + f"{'phase':11}" + "".join(f" {c.name:>18}" for c in cs))
    for phase in (*PHASES, "sum"):
        cells = []
        for c in cs:
            if phase == "sum":
                took = sum(_med(phases[c.name].get(p, [])) for p in PHASES)
            else:
                took = _med(phases[c.name].get(phase, []))
            cells.append(f" {took * 1000:18.0f}")
        print(f"    {phase:11}" + "".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rtts", type=int, nargs="+", default=[0, 50])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--trace-rounds", type=int, default=5)
    parser.add_argument(
        "--against", type=Path, metavar="DIR", help="also run the gpudash of another checkout"
    )
    args = parser.parse_args(argv)
    for tree in (ROOT, args.against):
        if tree is not None:
            compileall.compile_dir(tree / "gpudash", quiet=1)
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
        cs = contenders(rig, Path(tmp), args.against)
        for c in cs:  # one untimed run each: the page cache, the host's first login
            run(c.cmd, c.stdin, c.tree)
        for rtt in args.rtts:
            rig.set_link(rig.hosts[0], delay_ms=rtt)
            report(rtt, cs, measure(cs, args.rounds, args.trace_rounds, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
