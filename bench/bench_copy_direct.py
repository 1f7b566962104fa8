"""Benchmark: a direct copy between namespaced hosts against the raw pipeline, a fan-out of N
against one copy, and a resume of a complete copy against the full copy.

Run (as root, under the rig lock):
    flock /tmp/gpudash-rig.lock .venv/bin/python -m bench.bench_copy_direct [--big-mib 256]
        [--small 2000] [--fanout 4] [--rounds 1]

Hosts: tests/support/netrig.py (own namespace, address and sshd each, one bridge). The tree on
h0: --big-mib of incompressible data in 4 files plus --small files of 1-16 KiB. Each round:
- raw: on h0 itself, `tar -cf - . | ssh h1 'tar -xf - -C ~/raw'` (OpenSSH's default cipher,
  no verification): the host's own pipeline, the figure a direct copy is held to;
- direct: the real CLI as a process, `gpudash run copy h1 --yes` (start-up, both jobs, the
  transfer over `streams` streams, the sha256 of every file on both hosts, the rename);
- resume: the same command again on the complete copy (it only hashes and compares);
- fan-out: `gpudash run copy h1 .. hN --yes` to N fresh destinations (chain, then each
  destination's own check and completion, all verified).
Wall times, medians of --rounds; destinations are removed between runs. The machine's CPUs
are shared by every host of the rig, so the hosts' hashing and ciphers compete for them.
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

from tests.support.netrig import NetRig


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


def gpudash(config: Path, *hosts: str) -> float:
    cmd = [sys.executable, "-m", "gpudash", "run", "copy", *hosts, "--yes", "--config"]
    t0 = time.monotonic()
    done = subprocess.run([*cmd, str(config)], capture_output=True, text=True, timeout=3600)
    took = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"gpudash run copy {' '.join(hosts)} failed:\n{done.stdout[-3000:]}")
    return took


def raw(rig: NetRig) -> float:
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
    shutil.rmtree(dst.home / "raw")
    return took


def clear(rig: NetRig, n: int) -> None:
    for host in rig.hosts[1 : n + 1]:
        shutil.rmtree(host.home / "dst", ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_copy_direct")
    parser.add_argument("--big-mib", type=int, default=256)
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--fanout", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="bench-copy-") as tmp,
        NetRig(args.fanout + 1, Path(tmp) / "rig") as rig,
    ):
        if rig.mode != "netns":
            raise SystemExit(f"needs namespaced hosts: {rig.fallback}")
        (rig.hosts[0].home / "src").mkdir()
        size = make_tree(rig.hosts[0].home / "src", args.big_mib, args.small)
        config = Path(tmp) / "config.toml"
        config.write_text(
            rig.config_toml()
            + '\n[tasks.copy]\nparams = { from = "h0", path = "~/src", to = "~/dst", streams = 4,'
            " chunk_mb = 64 }\n"
        )
        names = [h.name for h in rig.hosts[1:]]
        times: dict[str, list[float]] = {"raw": [], "direct": [], "resume": [], "fanout": []}
        for _ in range(args.rounds):
            clear(rig, args.fanout)
            times["raw"].append(raw(rig))
            times["direct"].append(gpudash(config, "h1"))
            times["resume"].append(gpudash(config, "h1"))
            clear(rig, args.fanout)
            times["fanout"].append(gpudash(config, *names))
        med = {k: statistics.median(v) for k, v in times.items()}
        mib = size / 1024 / 1024
        print(f"tree: {mib:.0f} MiB ({args.big_mib} MiB in 4 files + {args.small} small files)")
        print(f"raw tar | ssh tar (on h0):   {med['raw']:6.1f} s  {mib / med['raw']:6.1f} MiB/s")
        print(
            f"gpudash direct, verified:    {med['direct']:6.1f} s  {mib / med['direct']:6.1f} MiB/s"
            f"  ({med['raw'] / med['direct']:.2f}x raw)"
        )
        print(
            f"resume of the complete copy: {med['resume']:6.1f} s"
            f"  ({med['resume'] / med['direct'] * 100:.0f}% of the full copy)"
        )
        print(
            f"fan-out to {args.fanout}, all verified:  {med['fanout']:6.1f} s"
            f"  ({med['fanout'] / med['direct']:.2f}x one copy)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
