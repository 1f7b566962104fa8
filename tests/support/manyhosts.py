"""Many SSH hosts on loopback for scale tests and benches: N ports, ceil(N/16) real sshd.

OpenSSH listens on at most 16 sockets per daemon (MAX_LISTEN_SOCKS), so N hosts take
ceil(N/16) daemons; host i is served by daemon i % daemons, so that, as with real machines,
hosts probed at the same time land on different servers. Every daemon runs with OpenSSH's
defaults for MaxStartups (10:30:100) and MaxSessions (10), and every host has the fake H200
toolset (tests/support/fakegpu.py) on PATH.
"""

from __future__ import annotations

import contextlib
import getpass
import subprocess
import time
from collections import Counter
from pathlib import Path

import asyncssh

from tests.support import FIXTURES, fakegpu
from tests.support.sshd import free_ports

SSHD = "/usr/sbin/sshd"
PORTS_PER_DAEMON = 16
CAPTURES = FIXTURES / "h200-1x"


class LoopbackFleet:
    """N SSH hosts on loopback ports, ceil(N/16) sshd daemons, one fake H200 toolset."""

    def __init__(self, n: int, root: Path) -> None:
        self.n, self.root = n, root
        self.user = getpass.getuser()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []
        self.logs: list[Path] = []

    def __enter__(self) -> LoopbackFleet:
        root = self.root
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        host_key.write_private_key(root / "host_key")
        (root / "host_key").chmod(0o600)
        client = asyncssh.generate_private_key("ssh-ed25519")
        client.write_private_key(root / "client_key")
        (root / "client_key").chmod(0o600)
        (root / "authorized_keys").write_bytes(client.export_public_key())
        fakegpu.install(root / "bin", CAPTURES)
        (root / "home").mkdir()
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.ports = free_ports(self.n)
        pub = host_key.export_public_key().decode().strip()
        (root / "known_hosts").write_text("".join(f"[127.0.0.1]:{p} {pub}\n" for p in self.ports))
        daemons = -(-self.n // PORTS_PER_DAEMON)
        for d in range(daemons):
            ports = self.ports[d::daemons]  # host i is served by daemon i % daemons
            config = root / f"sshd_{d}.conf"
            config.write_text(
                "".join(f"ListenAddress 127.0.0.1:{p}\n" for p in ports)
                + f"HostKey {root / 'host_key'}\nPidFile {root / f'sshd_{d}.pid'}\n"
                f"AuthorizedKeysFile {root / 'authorized_keys'}\nStrictModes no\nUsePAM no\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                "PermitRootLogin prohibit-password\nLogLevel VERBOSE\n"
                f'SetEnv "PATH={root / "bin"}:/usr/bin:/bin" "HOME={root / "home"}"\n'
            )
            log = root / f"sshd_{d}.log"
            self.logs.append(log)
            with log.open("ab") as out:
                self.procs.append(
                    subprocess.Popen(
                        [SSHD, "-D", "-e", "-f", str(config)],
                        stdout=out,
                        stderr=out,
                        stdin=subprocess.DEVNULL,
                    )
                )
        deadline = time.monotonic() + 30
        for log in self.logs:
            while "Server listening" not in log.read_text(errors="replace"):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {log.read_text()[-500:]}")
                time.sleep(0.05)
        return self

    def config(self, path: Path, *, concurrency: int = 64, max_handshakes: int = 16) -> Path:
        lines = [
            "[defaults]",
            f"concurrency = {concurrency}",
            f"max_handshakes = {max_handshakes}",
            f'user = "{self.user}"',
            f'identity_file = "{self.root / "client_key"}"',
            f'known_hosts = "{self.root / "known_hosts"}"',
            'address = "127.0.0.1"',
            'network_targets = ["http://127.0.0.1:9/"]',
            "connect_timeout = 30",
            "probe_timeout = 120",
        ]
        for i, port in enumerate(self.ports):
            lines += [f"[hosts.h{i:04d}]", f"port = {port}"]
        path.write_text("\n".join(lines) + "\n")
        return path

    def server_refusals(self) -> Counter[str]:
        """sshd's own complaints: MaxStartups drops, refused sessions, resets before auth."""
        found: Counter[str] = Counter()
        for log in self.logs:
            for line in log.read_text(errors="replace").splitlines():
                if "MaxStartups" in line or "drop connection" in line:
                    found["MaxStartups drop"] += 1
                elif "no more sessions" in line:
                    found["MaxSessions refused"] += 1
                elif "preauth" in line and ("reset" in line or "Connection closed" in line):
                    found["closed before auth"] += 1
        return found

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
