"""Benchmark: `gpudash run copy` against plain `ssh a 'tar -cf - DIR' | ssh b 'tar -xf -'`.

Run:  .venv/bin/python -m bench.bench_copy [--big-mib 320] [--small 3000] [--rounds 3]

Two hosts of the test sshd (tests/support/sshd.py, one real OpenSSH server, two ports). The source
tree on h0: --big-mib of incompressible data in 4 files plus --small files of 1-16 KiB in
nested directories. Each round, in alternating order, times from process start to exit:
- gpudash: the real CLI as a process, `gpudash run copy h1 --yes` (Python start-up, both
  connections, the transfer through gpudash, then the sha256 of every file on both hosts,
  then the rename into place); the transfer alone is read off the moment the "verifying"
  line arrives;
- plain: the OpenSSH client, two `ssh` processes joined by a pipe, on the same sshd, with
  its default cipher (chacha20-poly1305) and again with `-c aes128-gcm@openssh.com` (what
  gpudash picks on a CPU with AES instructions, so neither side wins on the cipher alone);
- plain + sha256: the plain copy, then `find | xargs sha256sum` on both hosts at once, the
  check gpudash makes (so the verified copy has a like-for-like baseline too).
Medians of --rounds; each "vs base" ratio is taken within a round, then the median. The
destination is removed between runs. "cpu here" is the CPU time of this machine's side (the
gpudash process, or the ssh clients), the figure least bent by other load on a shared
machine; sshd's work on the two hosts is not in it.
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

from tests.support.sshd import FakeHost, Sshd  # noqa: E402

# The smoke size: the argument lists that run this bench in seconds, so that a change that
# breaks it is a failing test (tests/perf/test_bench_smoke.py), not a surprise at the next
# measurement.
SMOKE: tuple[tuple[str, ...], ...] = (("--big-mib", "4", "--small", "20", "--rounds", "1"),)


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


def ssh(sshd: Sshd, host: FakeHost, command: str, *opts: str) -> list[str]:
    return [
        "ssh", "-p", str(host.port), "-i", str(sshd.client_key), "-F", "/dev/null",
        "-o", f"UserKnownHostsFile={sshd.known_hosts}", "-o", "BatchMode=yes", *opts,
        f"{sshd.user}@127.0.0.1", command,
    ]  # fmt: skip


def config(sshd: Sshd, path: Path) -> str:
    text = "".join(sshd.host_toml(host) + "\n" for host in sshd.hosts[:2])
    text += (
        '[tasks.copy]\nparams = { from = "h0", path = "~/data", to = "~/dst", via = "gpudash" }\n'
    )
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


def plain_round(sshd: Sshd, *, verify: bool = False, cipher: str | None = None) -> float:
    a, b = sshd.hosts[:2]
    opts = ("-c", cipher) if cipher else ()
    send = shlex.join(ssh(sshd, a, "tar -cf - -C ~/data .", *opts))
    take = shlex.join(ssh(sshd, b, "mkdir -p ~/dst && tar -xf - -C ~/dst", *opts))
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


# name, what it is, the baseline it is compared with (in the same round)
ROWS = (
    ("plain", "plain ssh tar | ssh tar (chacha20)", None),
    ("plain_aes", "plain, ssh -c aes128-gcm", None),
    ("transfer", "gpudash run copy: transfer", "plain"),
    ("transfer", "  the same, vs plain aes128-gcm", "plain_aes"),
    ("plainv", "plain + sha256 on both hosts", None),
    ("ours", "gpudash run copy: total, verified", "plainv"),
)


def one_round(
    sshd: Sshd, cfg: str, dst: Path, flip: bool
) -> tuple[dict[str, float], dict[str, float]]:
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}
    order = ["ours", "plain", "plain_aes", "plainv"]
    for which in reversed(order) if flip else order:
        subprocess.run(["rm", "-rf", str(dst)], check=True)
        before = child_cpu()
        if which == "ours":
            times["transfer"], times["ours"] = gpudash_round(cfg)
        elif which == "plain_aes":
            times[which] = plain_round(sshd, cipher="aes128-gcm@openssh.com")
        else:
            times[which] = plain_round(sshd, verify=which == "plainv")
        cpu[which] = child_cpu() - before
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big-mib", type=int, default=320)
    parser.add_argument("--small", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp))
        sshd.start()
        try:
            src, dst = sshd.hosts[0].home / "data", sshd.hosts[1].home / "dst"
            src.mkdir()
            size = make_tree(src, args.big_mib, args.small)
            cfg = config(sshd, Path(tmp) / "config.toml")
            os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
            for i in range(args.rounds):
                rounds.append(one_round(sshd, cfg, dst, flip=i % 2 == 1))
        finally:
            sshd.close()
    mib = size / (1 << 20)
    print(
        f"copy {mib:.0f} MiB in {4 + args.small} files, h0 -> h1, medians of {args.rounds} rounds"
    )
    print(f"{'':<36} {'time':>9} {'rate':>13} {'vs base':>8} {'cpu here':>9}  (each round)")
    for key, name, base in ROWS:
        times = [t[key] for t, _ in rounds]
        med = statistics.median(times)
        # the ratio is taken within each round (baseline run minutes apart would see other load)
        ratio = f"{statistics.median(t[key] / t[base] for t, _ in rounds):.2f}x" if base else "-"
        used = [c[key] for _, c in rounds if key in c]
        cpu = f"{statistics.median(used):7.2f} s" if used else ""
        each = " ".join(f"{t:.2f}" for t in times)
        print(f"{name:<36} {med:7.2f} s {mib / med:7.1f} MiB/s {ratio:>8} {cpu:>9}  ({each})")


if __name__ == "__main__":
    main()
