"""Bring N namespaced test hosts up (and leave them running), or take them all down.

    python -m bench.netrig up 20 [--dir DIR]   # prints the rig as JSON; DIR/config.toml reaches it
    python -m bench.netrig down                # removes every rig `up` left (and any of dead runs)

The hosts are tests/support/netrig.py's: their own namespace, address, sshd and fake GPU tools. Runs
as root (namespaces need CAP_NET_ADMIN); without it the hosts are loopback aliases and the
rig says so. A bench script that measures should use `NetRig` as a context manager instead,
so the rig goes away with it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.support import netrig_net
from tests.support.netrig import NetRig, dump


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.netrig", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="create N hosts and leave them running")
    up.add_argument("n", type=int)
    up.add_argument("--dir", type=Path, help="work dir (default: a new one under /tmp)")
    sub.add_parser("down", help="remove every rig that `up` created")
    args = parser.parse_args(argv)
    if args.command == "down":
        gone = netrig_net.reap_stale(persistent=True)
        print(f"removed {len(gone)} rig(s)" + (f": {', '.join(gone)}" if gone else ""))
        return 0
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="gpudash-netrig-"))
    rig = NetRig(args.n, workdir, persistent=True).up()
    (workdir / "config.toml").write_text(rig.config_toml())
    print(dump(rig))
    print(f"config: {workdir / 'config.toml'}   (take it down: python -m bench.netrig down)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
