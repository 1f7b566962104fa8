"""Test hosts with their own addresses: N network namespaces, each with its own OpenSSH sshd.

    with NetRig(4, workdir) as rig:
        Path("c.toml").write_text(rig.config_toml(connect_timeout=3))
        rig.cut(rig.hosts[1])          # silent drop: packets vanish, nothing answers
        rig.set_link(rig.hosts[2], delay_ms=200, loss_pct=5)
        rig.kill_sshd(rig.hosts[3])    # connection refused, open connections die

Layout (namespace mode, the default as root): a bridge `gd<run>br` holding 10.X.0.1/16 (X is
213 unless that is taken), namespaces `gd<run>-h0`... on veth pairs with 10.X.0.(10+i), each
running `sshd` on port 22 with its own host key, one client key authorized everywhere, and a
fake GPU toolset on PATH (tests/fakegpu.py, the H200 captures). Namespaces have no default
route and resolve names against their own loopback, so nothing a host runs leaves the rig.
A namespace `gd<run>-client` on the same bridge runs commands that need the same isolation
on the client side (a DNS name that must fail without asking the machine's resolver).

Without CAP_NET_ADMIN (or with GPUDASH_NETRIG=loopback) the rig falls back to loopback: each
host is 127.0.0.(10+i) on a port of its own, served by a userspace relay (tests/netrelay.py)
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
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import fakegpu
import netrig_net as net
from netrig_faults import Faults

SSHD = Path("/usr/sbin/sshd")
RELAY = Path(__file__).with_name("netrelay.py")
CAPTURES = Path(__file__).parent / "fixtures" / "h200-1x"
READY_TIMEOUT_S = 15.0
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


def _banner(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1) as s:
            return s.recv(8).startswith(b"SSH-2.0-")
    except OSError:
        return False


def wait_until(condition, timeout: float, what: str) -> None:
    """Poll `condition` every 20 ms; raise naming `what` when it stays false."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"netrig: {what} not within {timeout:g}s")
        time.sleep(0.02)


class NetRig(Faults):
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
            subprocess.run(["rm", "-rf", str(folder)], check=True)
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
                net.kill_pids([*_children(proc.pid), proc.pid])
        net.teardown(self._rec)
        for proc in procs:
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)

    # -- sshd --------------------------------------------------------------------------------

    def _sshd_config(self, host: RigHost) -> Path:
        listen = [f"127.0.0.1:{host.backend_port}"]
        if not host.relayed:
            listen.append(f"{host.address}:{host.port}")
        path = f"{host.bin_dir}:/usr/local/bin:/usr/bin:/bin"
        defaults = [
            *(f"ListenAddress {a}" for a in listen),
            f"HostKey {host.root / 'host_ed25519'}",
            f"PidFile {host.root / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}",
            "StrictModes no",
            "UsePAM no",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "AllowTcpForwarding yes",
            "MaxStartups 100:30:200",
            "MaxSessions 10",
            "LogLevel VERBOSE",
            f'SetEnv "PATH={path}" "HOME={host.home}" GPUDASH_TEST_HOST={host.name}',
        ]
        # An option replaces the default of its keyword: sshd keeps the first value of most
        # keywords but the last of some (MaxStartups), so never give it both.
        replaced = {line.split()[0].lower() for line in host.options if line.strip()}
        lines = [*host.options, *(d for d in defaults if d.split()[0].lower() not in replaced)]
        config = host.root / "sshd_config"
        config.write_text("\n".join(lines) + "\n")
        check = subprocess.run([str(SSHD), "-t", "-f", str(config)], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"netrig: sshd rejected {config}: {check.stderr.strip()}")
        return config

    def _spawn(self, host: RigHost) -> None:
        config = self._sshd_config(host)
        argv = [str(SSHD), "-D", "-e", "-f", str(config)]
        if host.netns:
            argv = [net.IP, "netns", "exec", host.netns, *argv]
        with (host.root / "sshd.log").open("ab") as log:
            host.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={"PATH": "/usr/sbin:/usr/bin:/bin", "LANG": "C"},
                start_new_session=self.persistent,
            )
        self._rec["pids"].append(host.proc.pid)
        net.record(self.run, self._rec)

    def _ready(self, host: RigHost) -> bool:
        if host.proc is None or host.proc.poll() is not None:
            log = (host.root / "sshd.log").read_text(errors="replace")[-1500:]
            raise RuntimeError(f"netrig: sshd of {host.name} exited; log tail:\n{log}")
        if self.mode == "loopback":  # the backend itself: the relay may be cutting the host
            return _banner("127.0.0.1", host.backend_port)
        return _banner(host.address, host.port)  # through the relay when there is one

    def _wait_ready(self, hosts: list[RigHost]) -> None:
        pending = list(hosts)

        def check() -> bool:
            pending[:] = [h for h in pending if not self._ready(h)]
            return not pending

        wait_until(check, READY_TIMEOUT_S, "sshd answering on every host")
        if self.mode == "loopback" and "" not in self._relays:
            self._relay_update(hosts[0])

    def kill_sshd(self, host: RigHost | str | int, *, connections: bool = True) -> None:
        """Stop the host's sshd listener (new connections are refused) and by default its
        open connections too (they drop mid-session)."""
        host = self.host(host)
        if host.proc is None:
            return
        children = _children(host.proc.pid)
        net.kill_pids([host.proc.pid] + (children if connections else []))
        if not connections:
            self._orphans += children
        host.proc.wait(5)
        host.proc = None
        if host.relayed and self._relays:  # the relay must refuse too, not accept and hang up
            self._links.setdefault(host.name, {})["listening"] = False
            self._relay_update(host)

    def start_sshd(self, host: RigHost | str | int) -> None:
        """Start the host's sshd again (same keys, same address)."""
        host = self.host(host)
        if host.proc is not None and host.proc.poll() is None:
            return
        self._spawn(host)
        if host.relayed and self._relays:
            self._links.setdefault(host.name, {})["listening"] = True
            self._relay_update(host)
        self._wait_ready([host])

    def restart_sshd(self, host: RigHost | str | int, *, connections: bool = True) -> None:
        self.kill_sshd(host, connections=connections)
        self.start_sshd(host)

    def sshd_options(self, host: RigHost | str | int, *lines: str) -> None:
        """Restart the host's sshd with extra config lines (e.g. "MaxSessions 1")."""
        host = self.host(host)
        host.options = list(lines)
        self.restart_sshd(host)

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


def _children(pid: int) -> list[int]:
    """Every descendant of pid (sshd's per-connection processes and their sessions)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    kids: dict[int, list[int]] = {}
    for line in out.splitlines():
        p, pp = (int(x) for x in line.split())
        kids.setdefault(pp, []).append(p)
    found, todo = [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def dump(rig: NetRig) -> str:
    """The rig as JSON (bench/netrig.py prints it)."""
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
