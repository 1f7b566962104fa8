"""gpudash probe vs parallel OpenSSH vs `ansible -m setup`, on the same namespaced hosts.

    .venv/bin/python -m bench.bench_fleet [--sizes 1 20 100] [--rtts 0 50] [--forks 20]

The hosts are tests/support/netrig.py's: each its own network namespace, address and OpenSSH sshd
with the fake H200 tools. RTT is added with netem where the kernel has it, else by the rig's
userspace relay in front of each sshd (both clients cross the same relay). Each N uses the
first N hosts of one rig. Every contender runs as a whole process, cold (no connection kept
between runs), with the same parallelism (`--forks`):

  gpudash   `gpudash probe --json`, config `concurrency` = `max_handshakes` = forks
  openssh   xargs -P forks: `ssh -o BatchMode=yes HOST /bin/sh -s < script`, where the
            script is exactly the one gpudash builds for that host (all sections)
  ansible   `ansible all -m setup -f forks` (ansible-core from PyPI, installed by this
            script into .bench-venv/), inventory = the same hosts, key and known_hosts

gpudash and openssh: median of --rounds runs, interleaved; ansible: one run (the slow one).
The machine's load average is printed with the table: the host side of every contender
runs on the same CPUs, so a loaded machine slows all three.
Targets (issue 6): gpudash within 1.2x of openssh at every N and RTT; ansible >= 5x slower.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from gpudash.config.load import parse_config  # noqa: E402
from gpudash.host_probe import plan_for  # noqa: E402
from gpudash.probe.script import build_script  # noqa: E402
from tests.support.netrig import NetRig  # noqa: E402

BENCH_VENV = ROOT / ".bench-venv"
ANSIBLE = BENCH_VENV / "bin" / "ansible"

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (
    ("--sizes", "2", "--rtts", "0", "--rounds", "1", "--no-ansible"),
)


def ensure_ansible() -> None:
    if ANSIBLE.exists():
        return
    subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
    subprocess.run([str(BENCH_VENV / "bin" / "pip"), "install", "-q", "ansible-core"], check=True)


def wall(cmd: list[str], **kw: object) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - start, done


class Contenders:
    """The three ways to ask N hosts what they have, set up once per N."""

    def __init__(self, rig: NetRig, n: int, forks: int, work: Path) -> None:
        self.rig, self.n, self.forks = rig, n, forks
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        names = [h.name for h in rig.hosts[:n]]
        text = rig.config_toml(
            only=names,
            defaults={"concurrency": forks, "max_handshakes": forks},
            connect_timeout=30,
            probe_timeout=120,
        )
        self.config = work / "config.toml"
        self.config.write_text(text)
        # openssh: one script file per host, exactly what gpudash would send it
        config = parse_config(text, str(self.config))
        lines = []
        for host, rig_host in zip(config.hosts, rig.hosts[:n], strict=True):
            script = work / f"{host.name}.sh"
            script.write_text(build_script(plan_for(host)))
            lines.append(f"{rig_host.address} {rig_host.port} {script}\n")
        self.jobs = work / "jobs.txt"
        self.jobs.write_text("".join(lines))
        # ansible: an inventory of the same hosts, key and known_hosts
        inventory = ["[rig]"]
        inventory += [
            f"{h.name} ansible_host={h.address} ansible_port={h.port}" for h in rig.hosts[:n]
        ]
        inventory += [
            "[all:vars]",
            f"ansible_user={rig.user}",
            f"ansible_ssh_private_key_file={rig.client_key}",
            "ansible_ssh_common_args='-o BatchMode=yes -o StrictHostKeyChecking=yes "
            f"-o UserKnownHostsFile={rig.known_hosts}'",
            "ansible_python_interpreter=/usr/bin/python3",
        ]
        self.inventory = work / "inventory.ini"
        self.inventory.write_text("\n".join(inventory) + "\n")

    def gpudash(self) -> float:
        took, done = wall(
            [sys.executable, "-m", "gpudash", "probe", "--json", "--config", str(self.config)]
        )
        ready = done.stdout.count('"state": "ready"')
        if ready != self.n:
            raise SystemExit(f"gpudash: {ready}/{self.n} ready: {done.stderr[-1500:]}")
        return took

    def openssh(self) -> float:
        ssh = (
            f"exec ssh -o BatchMode=yes -o StrictHostKeyChecking=yes "
            f"-o UserKnownHostsFile={self.rig.known_hosts} -i {self.rig.client_key} "
            f'-p "$1" {self.rig.user}@"$0" /bin/sh -s < "$2" > /dev/null'
        )
        took, done = wall(
            ["xargs", "-P", str(self.forks), "-L", "1", "sh", "-c", ssh], stdin=self.jobs.open()
        )
        if done.returncode != 0:
            raise SystemExit(f"openssh baseline failed: {done.stderr[-1500:]}")
        return took

    def ansible(self) -> float:
        home = self.work / "ansible-home"
        home.mkdir(exist_ok=True)
        env = {
            **os.environ,
            "HOME": str(home),
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(tempfile.mkdtemp(prefix="acp-", dir=home)),
            "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
            "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_STDOUT_CALLBACK": "minimal",
        }
        cmd = [str(ANSIBLE), "all", "-i", str(self.inventory), "-m", "setup", "-f", str(self.forks)]
        took, done = wall(cmd, env=env)
        ok = done.stdout.count("| SUCCESS")
        if ok != self.n:
            raise SystemExit(f"ansible: {ok}/{self.n} succeeded: {done.stdout[-1500:]}")
        return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 20, 100])
    parser.add_argument("--rtts", type=int, nargs="+", default=[0, 50])
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-ansible", action="store_true")
    args = parser.parse_args(argv)
    if not args.no_ansible:
        ensure_ansible()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpudash-bench-fleet-") as tmp:
        t0 = time.perf_counter()
        with NetRig(max(args.sizes), Path(tmp) / "rig") as rig:
            how = "netem" if rig.netem else "userspace relay"
            up = time.perf_counter() - t0
            print(f"rig: {len(rig.hosts)} hosts, {rig.mode}, delay by {how} (up in {up:.1f} s)")
            for rtt in sorted(args.rtts):
                for host in rig.hosts:
                    rig.set_link(host, delay_ms=rtt)
                for n in args.sizes:
                    forks = min(n, args.forks)
                    c = Contenders(rig, n, forks, Path(tmp) / f"n{n}-rtt{rtt}")
                    gs, os_ = [], []
                    for _ in range(args.rounds):  # interleaved: load drift hits both alike
                        gs.append(c.gpudash())
                        os_.append(c.openssh())
                    g, o = statistics.median(gs), statistics.median(os_)
                    a = None if args.no_ansible else c.ansible()
                    rows.append((n, rtt, forks, g, o, a))
                    print(
                        f"  N={n} RTT={rtt} ms: gpudash {g:.2f} s, openssh {o:.2f} s"
                        + ("" if a is None else f", ansible {a:.2f} s"),
                        flush=True,
                    )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        "|   N | RTT ms | forks | gpudash s | OpenSSH s | Ansible s "
        "| gpudash/OpenSSH | Ansible/gpudash |"
    )
    print(
        "|----:|-------:|------:|----------:|----------:|----------:|----------------:|----------------:|"
    )
    for n, rtt, forks, g, o, a in rows:
        ans = "-" if a is None else f"{a:.2f}"
        ratio = "-" if a is None else f"{a / g:.1f}x"
        print(
            f"| {n:3d} | {rtt:6d} | {forks:5d} | {g:9.2f} | {o:9.2f} | {ans:>9} "
            f"| {g / o:14.2f}x | {ratio:>15} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
