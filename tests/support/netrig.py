"""Test hosts with their own addresses: N network namespaces, each with its own OpenSSH sshd.

    with NetRig(4, workdir) as rig:
        Path("c.toml").write_text(rig.config_toml(connect_timeout=3))
        rig.cut(rig.hosts[1])          # silent drop: packets vanish, nothing answers
        rig.set_link(rig.hosts[2], delay_ms=200, loss_pct=5)
        rig.kill_sshd(rig.hosts[3])    # connection refused, open connections die

Layout (namespace mode, the default as root): a bridge `gd<run>br` holding 10.X.0.1/16 (X is
213 unless that is taken), namespaces `gd<run>-h0`... on veth pairs with 10.X.0.(10+i), each
running `sshd` on port 22 with its own host key, one client key authorized everywhere, and a
fake GPU toolset on PATH (tests/support/fakegpu.py, the H200 captures). Namespaces have no default
route and resolve names against their own loopback, so nothing a host runs leaves the rig.
A namespace `gd<run>-client` on the same bridge runs commands that need the same isolation
on the client side (a DNS name that must fail without asking the machine's resolver).

Without CAP_NET_ADMIN (or with GPUDASH_NETRIG=loopback) the rig falls back to loopback: each
host is 127.0.0.(10+i) on a port of its own, served by a userspace relay (tests/support/netrelay.py)
in front of that host's sshd on 127.0.0.1. `.fallback` then says why, and faults that need a
kernel (no route) are unavailable there.

Latency and loss come from `netem` where the kernel has it, else from the relay, which is
put in front of the host's sshd on the first set_link (connections open at that moment keep
their direct path). cut() is a blackhole rule in the host's namespace (relay in fallback).
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from tests.support import FIXTURES, fakegpu
from tests.support import netrig_net as net
from tests.support.netrig_faults import Faults
from tests.support.netrig_sshd import SshdControl, children_of

RELAY = Path(__file__).with_name("netrelay.py")
CAPTURES = FIXTURES / "h200-1x"
SSH_PORT = 22


class NetRigFallback(UserWarning):
    """The rig runs on loopback aliases: namespaces could not be created here."""


@dataclass
class RigHost:
    index: int
    name: str
    address: str
    port: int
    bin_dir: Path
    home: Path
    netns: str | None
    root: Path
    host_key: str = ""
    fingerprint: str = ""
    backend_port: int = SSH_PORT
    options: list[str] = field(default_factory=list)
    relayed: bool = False
    proc: subprocess.Popen | None = None

    def write_tool(self, name: str, body: str) -> Path:
        """An executable script `name` on this host's PATH, ahead of the system's."""
        path = self.bin_dir / name
        path.write_text(body)
        path.chmod(0o755)
        return path


class NetRig(SshdControl, Faults):
    """N namespaced hosts with real sshds, and the faults tests inflict on them."""

    def __init__(
        self,
        n: int,
        workdir: Path | str,
        *,
        captures: Path | dict | None = CAPTURES,
        persistent: bool = False,
    ) -> None:
        self.n = n
        self.workdir = Path(workdir)
        self.captures = captures
        self.persistent = persistent
        self.user = getpass.getuser()
        self.hosts: list[RigHost] = []
        self.fallback = net.can_create_namespaces()
        self.mode = "loopback" if self.fallback else "netns"
        self.known_hosts = self.workdir / "known_hosts"
        self.client_key = self.workdir / "client_ed25519"
        self.run = ""
        self.client_netns: str | None = None
        self.client_address: str | None = None  # the client namespace's, namespace mode only
        self.spare_address: str | None = None  # on the subnet, owned by nobody: ARP fails
        self.netem = False
        self._rec: dict = {}
        self._relays: dict[str, subprocess.Popen] = {}  # by host name; "" for loopback's one
        self._orphans: list[int] = []  # connections of listeners stopped without them
        self._links: dict[str, dict] = {}
        self._gen = 0
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> NetRig:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def up(self) -> NetRig:
        """Build the network, start every sshd and wait until each answers; on any failure
        everything built so far is removed before the error propagates."""
        if self.fallback:
            msg = f"netrig: namespaces unavailable ({self.fallback}); hosts are 127.0.0.x aliases"
            warnings.warn(msg, NetRigFallback, stacklevel=2)
            print(msg, file=sys.stderr)
        net.reap_stale()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.run = net.new_run_id()
        self._rec = {"run": self.run, "pid": os.getpid(), "persistent": self.persistent}
        self._rec.update(netns=[], links=[], pids=[], routes=[], workdir=str(self.workdir))
        if not self.persistent:
            atexit.register(self.close)
        try:
            self._keys()
            addresses = self._network()
            for i, address in enumerate(addresses):
                self.hosts.append(self._host(i, address))
            self._write_known_hosts()
            for host in self.hosts:
                self._spawn(host)
            self._wait_ready(self.hosts)
        except BaseException:
            self.close()
            raise
        return self

    def _keys(self) -> None:
        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(self.client_key)
        self.client_key.chmod(0o600)
        (self.workdir / "authorized_keys").write_bytes(key.export_public_key())
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)

    def _network(self) -> list[str]:
        if self.mode == "loopback":
            net.record(self.run, self._rec)
            first = int(ipaddress.ip_address("127.0.0.10"))
            return [str(ipaddress.ip_address(first + i)) for i in range(self.n)]
        names = [f"gd{self.run}-h{i}" for i in range(self.n)]
        self.client_netns = f"gd{self.run}-client"
        with net.locked():  # two runs starting at once must not pick the same subnet
            subnet = net.free_subnet()
            addresses = net.build(
                self.run, f"gd{self.run}br", subnet, [*names, self.client_netns], self._rec
            )
        self.client_address = addresses[-1]
        self.spare_address = str(subnet.network_address + 5)  # in the subnet, owned by no one
        self.netem = net.has_netem(names[0], "eth0")
        return addresses[:-1]

    def _host(self, i: int, address: str) -> RigHost:
        root = self.workdir / "hosts" / f"h{i}"
        host = RigHost(
            index=i,
            name=f"h{i}",
            address=address,
            port=SSH_PORT,
            bin_dir=root / "bin",
            home=root / "home",
            netns=f"gd{self.run}-h{i}" if self.mode == "netns" else None,
            root=root,
        )
        self.reset_files(host)
        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(root / "host_ed25519")
        (root / "host_ed25519").chmod(0o600)
        host.host_key = key.export_public_key().decode().strip()
        host.fingerprint = key.get_fingerprint()
        if self.mode == "loopback":
            host.port, host.backend_port = _free_port(address), _free_port("127.0.0.1")
            host.relayed = True
        return host

    def reset_files(self, host: RigHost) -> None:
        """Empty home, and a bin dir holding only the fake GPU tools."""
        for folder in (host.bin_dir, host.home):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        if self.captures is not None:
            fakegpu.install(host.bin_dir, self.captures)

    def _write_known_hosts(self) -> None:
        lines = []
        for h in self.hosts:
            where = h.address if h.port == 22 else f"[{h.address}]:{h.port}"
            lines.append(f"{where} {h.host_key}\n")
        self.known_hosts.write_text("".join(lines))

    def close(self) -> None:
        """Stop every process and remove every namespace and link; idempotent."""
        if self._closed or not self._rec:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        procs = [h.proc for h in self.hosts] + list(self._relays.values())
        net.kill_pids(self._orphans)
        for proc in procs:
            if proc is not None and proc.poll() is None:
                net.kill_pids([*children_of(proc.pid), proc.pid])
        net.teardown(self._rec)
        for proc in procs:
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)

    def host(self, which: RigHost | str | int) -> RigHost:
        if isinstance(which, RigHost):
            return which
        if isinstance(which, int):
            return self.hosts[which]
        return next(h for h in self.hosts if h.name == which)


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def dump(rig: NetRig) -> str:
    """The rig as JSON (python -m bench.netrig prints it)."""
    return json.dumps(
        {
            "run": rig.run,
            "mode": rig.mode,
            "fallback": rig.fallback,
            "netem": rig.netem,
            "known_hosts": str(rig.known_hosts),
            "client_key": str(rig.client_key),
            "hosts": [
                {"name": h.name, "address": h.address, "port": h.port, "netns": h.netns}
                for h in rig.hosts
            ],
        },
        indent=2,
    )
