"""Benchmark: a direct copy between namespaced hosts against the raw pipeline, a fan-out of N
against one copy, and a resume of a complete copy against the full copy.

Run (as root, under the rig lock):
    flock /tmp/gpudash-rig.lock .venv/bin/python -m bench.bench_copy_direct [--big-mib 256]
        [--small 2000] [--fanout 4] [--rounds 1] [--link-mib N] [--streams 4]

Hosts: tests/support/netrig.py (own namespace, address and sshd each, one bridge). The tree on
h0: --big-mib of incompressible data in 4 files plus --small files of 1-16 KiB. Each round:
- raw: on h0 itself, `tar -cf - . | ssh h1 'tar -xf - -C ~/raw'` (OpenSSH's default cipher,
  no verification): the host's own pipeline, the figure a direct copy is held to;
- direct: the real CLI as a process, `gpudash run copy h1 --yes` (start-up, both jobs, the
  transfer over --streams streams, the sha256 of every file on both hosts, the rename);
- raw + sha256: raw, plus `sha256sum` of every file of both trees, both hosts at once (what
  a proof costs on top of the pipeline: the fair baseline of a verified copy);
- hash only: that hashing alone (the floor of a resume, which moves no bytes), with
  sha256sum and with OpenSSL's sha256 (the hasher gpudash's manifest uses where it works);
- resume: the same command again on the complete copy (it only hashes and compares);
- fan-out: `gpudash run copy h1 .. hN --yes` to N fresh destinations (chain, then each
  destination's own check and completion, all verified).
gpudash's own CPU during the direct copy: the CLI process's user + system time (it is a child
of this one, reaped: RUSAGE_CHILDREN) over its wall time, Python's start-up included.
--hop-cpu: during the last round's fan-out, every process's CPU (user + system) sampled from
/proc every 50 ms, summed by host (its network namespace) and by command (ssh, sshd, tar,
openssl...): what each hop of the chain spends. A process that lives less than one sample is
missed (short hashers), and the last 50 ms of each: a lower bound. Then the machine's own
/proc/stat over the same time (softirq: the kernel's packet work, which no process is
charged with) and the packets the hosts sent: with the links capped by tbf, TCP's packets
stay near one MTU (1.5-2.3 KB a packet measured on the rig, against 33 KB uncapped), so each
hop's kernel handles some 150,000 packets per 200 MiB.
Wall times, medians of --rounds; destinations are removed between runs. The machine's CPUs
are shared by every host of the rig, so the hosts' hashing and ciphers compete for them: a
fan-out to N asks N times the CPU of one copy of the same machine. --link-mib caps each
host's own link (tc tbf, each way) as its NIC would, so that the line rate, not the shared
CPU, bounds each host, as on real machines: what a fan-out's pipeline is meant to reach.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from tests.support.netrig import NetRig

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (
    ("--big-mib", "4", "--small", "20", "--fanout", "2", "--hop-cpu"),
)


def make_tree(root: Path, big_mib: int, small: int) -> int:
    for i in range(4):
        with open(root / f"shard-{i}.safetensors", "wb") as f:
            left = big_mib * 1024 * 1024 // 4
            while left:
                n = min(left, 8 << 20)
                f.write(os.urandom(n))
                left -= n
    for i in range(small):
        d = root / "files" / f"d{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.json").write_bytes(os.urandom(1024 * (1 + i % 16)))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def gpudash(config: Path, *hosts: str) -> tuple[float, float, str]:
    """Wall time, CPU seconds of the CLI process, and its output."""
    cmd = [sys.executable, "-m", "gpudash", "run", "copy", *hosts, "--yes", "--config"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run([*cmd, str(config)], capture_output=True, text=True, timeout=3600)
    took = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"gpudash run copy {' '.join(hosts)} failed:\n{done.stdout[-3000:]}")
    return took, cpu, done.stdout


SHA256SUM = "sha256sum"
OPENSSL = "openssl dgst -sha256 -r"  # what gpudash's manifest uses where it works


def hash_both(rig: NetRig, src: str, dst: str, tool: str = SHA256SUM) -> float:
    """`tool` over every file of h0:~/SRC and h1:~/DST, both hosts at once, one hasher per
    core (`nproc`)."""
    line = "cd {} && find . -type f -print0 | xargs -0 -r -P $(nproc) -n 8 " + tool + " > /dev/null"
    procs = []
    t0 = time.monotonic()
    for host, tree in ((rig.hosts[0], src), (rig.hosts[1], dst)):
        cmd = ["ip", "netns", "exec", host.netns or "", "sh", "-c", line.format(host.home / tree)]
        procs.append(subprocess.Popen(cmd))
    for proc in procs:
        if proc.wait(3600) != 0:
            raise SystemExit("sha256sum failed")
    return time.monotonic() - t0


def raw(rig: NetRig) -> tuple[float, float, float]:
    """The raw pipeline's time, then the time to hash both trees after it (sha256sum, then
    OpenSSL's sha256)."""
    src, dst = rig.hosts[0], rig.hosts[1]
    ssh = (
        f"ssh -i {rig.client_key} -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no"
        f" -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p {dst.port}"
        f" {rig.user}@{dst.address}"
    )
    line = f"cd {src.home}/src && tar -cf - . | {ssh} 'mkdir -p ~/raw && tar -xf - -C ~/raw'"
    cmd = ["ip", "netns", "exec", src.netns or "", "sh", "-c", line]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, env={**os.environ, "HOME": str(src.home)}, timeout=3600)
    took = time.monotonic() - t0
    hashing = hash_both(rig, "src", "raw")
    fast = hash_both(rig, "src", "raw", OPENSSL)
    shutil.rmtree(dst.home / "raw")
    return took, hashing, fast


def machine(rig: NetRig) -> tuple[list[float], int, int]:
    """The machine's CPU seconds by kind (/proc/stat: user, nice, system, idle, iowait, irq,
    softirq, steal) and the packets and bytes this rig's hosts have sent so far (its bridge's
    ports' rx counters, where every host's link enters the bridge; another rig's are not)."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as stat:
        cpu = [int(x) / tick for x in stat.readline().split()[1:9]]
    packets = octets = 0
    for port in Path("/sys/class/net").glob(f"gd{rig.run}v*"):
        with contextlib.suppress(OSError):
            packets += int((port / "statistics/rx_packets").read_text())
            octets += int((port / "statistics/rx_bytes").read_text())
    return cpu, packets, octets


class HopCpu:
    """CPU seconds by (host, command), sampled from /proc while it runs (see --hop-cpu), and
    the whole machine's CPU by kind and the rig's packets over the same time."""

    def __init__(self, rig: NetRig) -> None:
        self._rig = rig
        self.hosts: dict[str, str] = {}
        for host in rig.hosts:
            with_ns = Path("/run/netns") / (host.netns or "")
            if host.netns and with_ns.exists():
                self.hosts[f"net:[{with_ns.stat().st_ino}]"] = host.name
        self.tick = os.sysconf("SC_CLK_TCK")
        self.seen: dict[tuple[int, str], tuple[str, str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HopCpu:
        self._before = machine(self._rig)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._after = machine(self._rig)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    host = self.hosts.get(os.readlink(f"/proc/{pid}/ns/net"))
                    if host is None:
                        continue
                    stat = Path(f"/proc/{pid}/stat").read_text()
                except OSError:
                    continue
                comm = stat[stat.index("(") + 1 : stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2 :].split()
                cpu = (int(fields[11]) + int(fields[12])) / self.tick
                start = fields[19]  # a reused pid is another process
                self.seen[(int(pid), start)] = (host, comm, cpu)

    def table(self) -> str:
        by: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for host, comm, cpu in self.seen.values():
            by[host][comm] += cpu
        lines = []
        for host in sorted(by):
            top = sorted(by[host].items(), key=lambda kv: -kv[1])
            parts = ", ".join(f"{comm} {cpu:.2f}" for comm, cpu in top[:6] if cpu >= 0.01)
            lines.append(f"  {host}: {sum(by[host].values()):5.2f} s CPU ({parts})")
        (cpu0, p0, b0), (cpu1, p1, b1) = self._before, self._after
        user, _, system, idle, _, _, softirq, _ = (b - a for a, b in zip(cpu0, cpu1, strict=True))
        sent = p1 - p0
        lines.append(
            f"  machine: user {user:.2f}, system {system:.2f}, softirq {softirq:.2f}, idle"
            f" {idle:.2f} s (all CPUs); the hosts sent {sent} packets,"
            f" {(b1 - b0) / max(sent, 1):.0f} bytes a packet"
        )
        return "\n".join(lines)


def clear(rig: NetRig, n: int) -> None:
    for host in rig.hosts[1 : n + 1]:
        shutil.rmtree(host.home / "dst", ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_copy_direct")
    parser.add_argument("--big-mib", type=int, default=256)
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--fanout", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--link-mib", type=float, default=None, help="cap each host's link")
    parser.add_argument("--hop-cpu", action="store_true", help="CPU by host in the fan-out")
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="bench-copy-") as tmp,
        NetRig(args.fanout + 1, Path(tmp) / "rig") as rig,
    ):
        if rig.mode != "netns":
            raise SystemExit(f"needs namespaced hosts: {rig.fallback}")
        if args.link_mib:
            for host in rig.hosts:
                rig.limit_host(host, args.link_mib)
        (rig.hosts[0].home / "src").mkdir()
        size = make_tree(rig.hosts[0].home / "src", args.big_mib, args.small)
        config = Path(tmp) / "config.toml"
        config.write_text(
            rig.config_toml()
            + '\n[tasks.copy]\nparams = { from = "h0", path = "~/src", to = "~/dst",'
            f" streams = {args.streams}, chunk_mb = 64 }}\n"
        )
        names = [h.name for h in rig.hosts[1:]]
        keys = ("raw", "hash", "fast", "direct", "cpu", "resume", "rehash", "fanout")
        times: dict[str, list[float]] = {k: [] for k in keys}
        phases = []
        hop_cpu = ""
        for n in range(args.rounds):
            clear(rig, args.fanout)
            took, hashing, fast = raw(rig)
            times["raw"].append(took)
            times["hash"].append(hashing)
            times["fast"].append(fast)
            took, cpu, out = gpudash(config, "h1")
            times["direct"].append(took)
            times["cpu"].append(cpu)
            phases += re.findall(r"\(copy \d+s, verify \d+s\)", out)
            times["resume"].append(gpudash(config, "h1")[0])
            times["rehash"].append(hash_both(rig, "src", "dst", OPENSSL))
            clear(rig, args.fanout)
            if args.hop_cpu and n == args.rounds - 1:
                with HopCpu(rig) as sampled:
                    times["fanout"].append(gpudash(config, *names)[0])
                hop_cpu = sampled.table()
            else:
                times["fanout"].append(gpudash(config, *names)[0])
        med = {k: statistics.median(v) for k, v in times.items()}
        mib = size / 1024 / 1024
        proof = med["raw"] + med["hash"]
        fair = med["raw"] + med["fast"]
        print(f"tree: {mib:.0f} MiB ({args.big_mib} MiB in 4 files + {args.small} small files)")
        if args.link_mib:
            print(f"each host's link capped at {args.link_mib:g} MiB/s each way (tc tbf)")
        print(f"raw tar | ssh tar (on h0):   {med['raw']:6.1f} s  {mib / med['raw']:6.1f} MiB/s")
        print(
            f"raw + sha256sum both trees:  {proof:6.1f} s  {mib / proof:6.1f} MiB/s"
            f"  (hashing both at once {med['hash']:.1f} s)"
        )
        print(
            f"raw + openssl sha256 both:   {fair:6.1f} s  {mib / fair:6.1f} MiB/s"
            f"  (hashing both at once {med['fast']:.1f} s: gpudash's hasher)"
        )
        print(
            f"gpudash direct, verified:    {med['direct']:6.1f} s  {mib / med['direct']:6.1f} MiB/s"
            f"  ({med['raw'] / med['direct']:.2f}x raw, {proof / med['direct']:.2f}x raw+sha256sum,"
            f" {fair / med['direct']:.2f}x raw+openssl)"
            f"  {' '.join(phases)}"
        )
        pairs = zip(times["direct"], times["raw"], strict=True)
        rounds = " ".join(f"{d / r:.3f}" for d, r in pairs)
        print(
            f"direct / raw:                {med['direct'] / med['raw']:6.3f}x"
            f"  (medians; per round: {rounds})"
        )
        print(
            f"gpudash's own CPU in it:     {med['cpu']:6.2f} s"
            f"  ({med['cpu'] / med['direct'] * 100:.1f}% of one core over the copy's wall time)"
        )
        print(
            f"resume of the complete copy: {med['resume']:6.1f} s"
            f"  ({med['resume'] / med['direct'] * 100:.0f}% of the full copy; hashing both trees"
            f" alone (openssl) {med['rehash']:.1f} s; resume minus hashing"
            f" {(med['resume'] - med['rehash']) / med['direct'] * 100:.0f}% of the full copy)"
        )
        print(
            f"fan-out to {args.fanout}, all verified:  {med['fanout']:6.1f} s"
            f"  ({med['fanout'] / med['direct']:.2f}x one copy)"
        )
        if hop_cpu:
            print(f"CPU by host in the last fan-out (sampled every 50 ms):\n{hop_cpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
