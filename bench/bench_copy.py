"""Benchmark: `gpudash run copy` against plain `ssh a 'tar -cf - DIR' | ssh b 'tar -xf -'`.

Run:  .venv/bin/python bench/bench_copy.py [--big-mib 320] [--small 3000] [--rounds 3]

Two hosts of the test sshd (tests/sshd.py, one real OpenSSH server, two ports). The source
tree on h0: --big-mib of incompressible data in 4 files plus --small files of 1-16 KiB in
nested directories. Each round, in alternating order, times from process start to exit:
- gpudash: the real CLI as a process, `gpudash run copy h1 --yes` (Python start-up, both
  connections, the transfer through gpudash, then the sha256 of every file on both hosts,
  then the rename into place); the transfer alone is read off the moment the "verifying"
  line arrives;
- plain: the OpenSSH client, two `ssh` processes joined by a pipe, on the same sshd;
- plain + sha256: the plain copy, then `find | xargs sha256sum` on both hosts at once, the
  check gpudash makes (so the verified copy has a like-for-like baseline too).
Medians of --rounds; the destination is removed between rounds. "cpu here" is the CPU time of
this machine's side (the gpudash process, or the ssh clients), the figure least bent by other
load on a shared machine; sshd's work on the two hosts is not in it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from sshd import FakeHost, Sshd  # noqa: E402


def make_tree(root: Path, big_mib: int, small: int) -> int:
    """The source tree; returns its size in bytes."""
    total = 0
    for i in range(4):
        with open(root / f"weights-{i}.bin", "wb") as f:
            for _ in range(big_mib // 4):
                f.write(os.urandom(1 << 20))
        total += (big_mib // 4) << 20
    for i in range(small):
        folder = root / "pkgs" / f"p{i % 50}" / f"m{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        data = os.urandom(1024 + (i * 997) % (15 * 1024))
        (folder / f"f{i}.py").write_bytes(data)
        total += len(data)
    return total


def ssh(sshd: Sshd, host: FakeHost, command: str) -> list[str]:
    return [
        "ssh", "-p", str(host.port), "-i", str(sshd.client_key), "-F", "/dev/null",
        "-o", f"UserKnownHostsFile={sshd.known_hosts}", "-o", "BatchMode=yes",
        f"{sshd.user}@127.0.0.1", command,
    ]  # fmt: skip


def config(sshd: Sshd, path: Path) -> str:
    text = ""
    for host in sshd.hosts[:2]:
        text += (
            f'[hosts.{host.name}]\naddress = "127.0.0.1"\nport = {host.port}\n'
            f'user = "{sshd.user}"\nidentity_file = "{sshd.client_key}"\n'
            f'known_hosts = "{sshd.known_hosts}"\n\n'
        )
    text += '[tasks.copy]\nparams = { from = "h0", path = "~/data", to = "~/dst" }\n'
    path.write_text(text)
    return str(path)


def child_cpu() -> float:
    """CPU seconds used by finished child processes (this machine's side: ssh or gpudash)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def gpudash_round(cfg: str) -> tuple[float, float]:
    """(transfer seconds, total seconds) of `gpudash run copy h1`."""
    cmd = [sys.executable, "-m", "gpudash", "run", "copy", "h1", "--yes", "--config", cfg]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    transfer = 0.0
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if not transfer and "| verifying" in line:
            transfer = time.perf_counter() - start
    rc = proc.wait()
    total = time.perf_counter() - start
    if rc != 0 or not any("every sha256 matches" in line for line in lines):
        raise SystemExit("gpudash copy failed:\n" + "".join(lines[-20:]))
    return transfer, total


def plain_round(sshd: Sshd, verify: bool) -> float:
    a, b = sshd.hosts[:2]
    send = shlex.join(ssh(sshd, a, "tar -cf - -C ~/data ."))
    take = shlex.join(ssh(sshd, b, "mkdir -p ~/dst && tar -xf - -C ~/dst"))
    start = time.perf_counter()
    subprocess.run(f"{send} | {take}", shell=True, check=True)
    if verify:
        hashes = "cd {} && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum"
        procs = [
            subprocess.Popen(ssh(sshd, h, hashes.format(d)), stdout=subprocess.PIPE)
            for h, d in ((a, "~/data"), (b, "~/dst"))
        ]
        outs = [p.communicate()[0] for p in procs]
        assert outs[0] == outs[1] and outs[0], "plain copy differs"
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big-mib", type=int, default=320)
    parser.add_argument("--small", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp))
        sshd.start()
        try:
            src, dst = sshd.hosts[0].home / "data", sshd.hosts[1].home / "dst"
            src.mkdir()
            size = make_tree(src, args.big_mib, args.small)
            cfg = config(sshd, Path(tmp) / "config.toml")
            os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
            times: dict[str, list[float]] = {"ours": [], "transfer": [], "plain": [], "plainv": []}
            cpu: dict[str, list[float]] = {"ours": [], "plain": [], "plainv": []}
            for i in range(args.rounds):
                order = ["ours", "plain", "plainv"] if i % 2 == 0 else ["plainv", "plain", "ours"]
                for which in order:
                    subprocess.run(["rm", "-rf", str(dst)], check=True)
                    before = child_cpu()
                    if which == "ours":
                        transfer, total = gpudash_round(cfg)
                        times["transfer"].append(transfer)
                        times["ours"].append(total)
                    else:
                        times[which].append(plain_round(sshd, verify=which == "plainv"))
                    cpu[which].append(child_cpu() - before)
        finally:
            sshd.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    mib = size / (1 << 20)
    files = 4 + args.small

    def row(name: str, key: str, base: str | None) -> str:
        ratio = f"{med[key] / med[base]:.2f}x" if base else "-"
        rate = mib / med[key]
        spread = " ".join(f"{t:.2f}" for t in times[key])
        used = f"{statistics.median(cpu[key]):6.2f} s" if key in cpu else " " * 8
        return f"{name:<34} {med[key]:7.2f} s {rate:8.1f} MiB/s  {ratio:>6}  {used}  ({spread})"

    print(f"copy {mib:.0f} MiB in {files} files, h0 -> h1, median of {args.rounds} rounds")
    print(f"{'':<34} {'time':>9} {'rate':>14}  {'vs':>6}  {'cpu here':>8}  (each round)")
    print(row("plain ssh tar | ssh tar", "plain", None))
    print(row("gpudash run copy: transfer", "transfer", "plain"))
    print(row("plain + sha256 on both hosts", "plainv", None))
    print(row("gpudash run copy: total, verified", "ours", "plainv"))


if __name__ == "__main__":
    main()
