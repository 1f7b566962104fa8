"""A real OpenSSH `sshd` on loopback, listening on eight ports that act as eight fake hosts.

Why real: the behaviours gpudash depends on (MaxSessions, MaxStartups, the root signal
refusal, StrictModes, SetEnv) belong to OpenSSH, not to an in-process server.

Each port P gets a `Match LocalPort P` block whose `SetEnv` gives its sessions their own PATH
(the host's `bin/` first, so a test swaps a tool by writing a script there), HOME and
`GPUDASH_TEST_HOST`. SetEnv overrides the HOME that sshd sets from the passwd entry, but not
the working directory: sessions still start in the login user's passwd home directory.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

SSHD = Path("/usr/sbin/sshd")
N_HOSTS = 8
_START_ATTEMPTS = 5
_READY_TIMEOUT_S = 10.0
SERVER_OPTIONS = (
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
)
"""What every test sshd (tests/support/sshd.py, netrig_sshd.py) runs with: keys only, no PAM,
the limits well above what the tests need unless a test sets its own."""


class SshdMissing(RuntimeError):
    """Raised (never skipped) when OpenSSH's server is not installed."""


@dataclass(frozen=True)
class FakeHost:
    """One port of the test sshd, seen as a host of its own."""

    index: int
    port: int
    bin_dir: Path
    home: Path

    @property
    def name(self) -> str:
        return f"h{self.index}"

    def reset(self) -> None:
        """Empty bin_dir and home so the next test starts from a clean host."""
        for folder in (self.bin_dir, self.home):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)

    def write_tool(self, name: str, body: str) -> Path:
        """Put an executable script `name` on this host's PATH (ahead of the system's)."""
        path = self.bin_dir / name
        path.write_text(body)
        path.chmod(0o755)
        return path


async def run_script(
    transport: Any, script: str, timeout: float | None = 30
) -> tuple[bytes, int | None]:
    """Run `script` on any gpudash Transport: all its output, and its exit status."""
    return await transport.output(script, timeout=timeout)


def free_ports(count: int) -> list[int]:
    """Ports free right now on 127.0.0.1 (held open together so they are distinct)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _answers_ssh(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            return s.recv(8).startswith(b"SSH-2.0-")
    except OSError:
        return False


class Sshd:
    """The running server: its hosts, keys and the helpers tests use to break it."""

    def __init__(
        self,
        root: Path,
        *,
        host_options: dict[int, tuple[str, ...]] | None = None,
        host_path: dict[int, str] | None = None,
    ) -> None:
        """`host_options`: extra sshd_config lines for host i's `Match` block (a ForceCommand,
        say); `host_path`: host i's whole PATH, replacing the default (bin dir, then the
        system's), for a host that lacks a standard tool."""
        self._host_options = dict(host_options or {})
        self._host_path = dict(host_path or {})
        if not SSHD.exists():
            raise SshdMissing(
                f"{SSHD} not found: install openssh-server (apt-get install -y openssh-server)"
            )
        self.root = root
        self.user = getpass.getuser()
        self.log = root / "sshd.log"
        self.config = root / "sshd_config"
        self._pid_file = root / "sshd.pid"
        self._host_key_path = root / "host_ed25519"
        self.client_key = root / "client_ed25519"
        self.known_hosts = root / "known_hosts"
        self._authorized_keys = root / "authorized_keys"
        self._proc: subprocess.Popen[bytes] | None = None
        self.hosts: list[FakeHost] = []

        host_key = asyncssh.generate_private_key("ssh-ed25519")
        host_key.write_private_key(self._host_key_path)
        self._host_key_path.chmod(0o600)
        self.host_public_key = host_key.export_public_key().decode().strip()
        self.host_key_fingerprint = host_key.get_fingerprint()

        client_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key.write_private_key(self.client_key)
        self.client_key.chmod(0o600)
        self._authorized_keys.write_bytes(client_key.export_public_key())

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the listener; new ports are picked when one turned out to be taken."""
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        last_error = ""
        for _ in range(_START_ATTEMPTS):
            ports = [h.port for h in self.hosts] or free_ports(N_HOSTS)
            self._configure(ports)
            if self._spawn():
                return
            last_error = self.log.read_text(errors="replace")[-2000:]
            self.hosts = []  # retry on fresh ports
        raise RuntimeError(f"sshd did not start; log tail:\n{last_error}")

    def _configure(self, ports: list[int]) -> None:
        if not self.hosts:
            self.hosts = [
                FakeHost(
                    i,
                    p,
                    self.root / "hosts" / f"h{i}" / "bin",
                    self.root / "hosts" / f"h{i}" / "home",
                )
                for i, p in enumerate(ports)
            ]
            for host in self.hosts:
                host.reset()
        lines = [f"ListenAddress 127.0.0.1:{p}" for p in ports]
        lines += [
            f"HostKey {self._host_key_path}",
            f"PidFile {self._pid_file}",
            f"AuthorizedKeysFile {self._authorized_keys}",
            *SERVER_OPTIONS,
            "Subsystem sftp internal-sftp",
        ]
        for host in self.hosts:
            path = f"{host.bin_dir}:/usr/local/bin:/usr/bin:/bin"
            path = self._host_path.get(host.index, path)
            lines += [
                f"Match LocalPort {host.port}",
                f'  SetEnv "PATH={path}" "HOME={host.home}" GPUDASH_TEST_HOST={host.name}',
                *(f"  {line}" for line in self._host_options.get(host.index, ())),
            ]
        self.config.write_text("\n".join(lines) + "\n")
        self.known_hosts.write_text(
            "".join(f"[127.0.0.1]:{h.port} {self.host_public_key}\n" for h in self.hosts)
        )

    def _spawn(self) -> bool:
        check = subprocess.run(
            [str(SSHD), "-t", "-f", str(self.config)], capture_output=True, text=True
        )
        if check.returncode != 0:
            raise RuntimeError(f"sshd rejected its test config: {check.stderr.strip()}")
        log = self.log.open("ab")
        self._proc = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(self.config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={"PATH": "/usr/sbin:/usr/bin:/bin", "LANG": "C"},
        )
        log.close()
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if all(_answers_ssh(h.port) for h in self.hosts):
                return True
            time.sleep(0.05)
        self.stop()
        return False

    def stop(self) -> None:
        """Stop the listener (connections it already forked keep running, as on a real host)."""
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._proc.terminate()
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def restart(self, *, drop_connections: bool = True) -> None:
        """Stop and start on the same ports; by default the open connections die too."""
        if drop_connections:
            self.kill_connections()
        self.stop()
        self.start()

    def close(self) -> None:
        self.kill_connections()
        self.stop()

    # -- faults ----------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def connection_pids(self) -> list[int]:
        """The per-connection sshd children the listener forked."""
        if self.pid is None:
            return []
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(self.pid)], capture_output=True, text=True
        ).stdout
        return [int(p) for p in out.split()]

    def kill_connections(self, sig: int = signal.SIGKILL) -> int:
        """Kill the per-connection sshd children, not the listener; returns how many."""
        pids = self.connection_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        return len(pids)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def connections_to(self, port: int, *, since: int = 0) -> int:
        """TCP connections sshd accepted on `port`, counted in its log from offset `since`."""
        with self.log.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        mark = f" on 127.0.0.1 port {port} "
        return sum(
            1 for line in text.splitlines() if line.startswith("Connection from") and mark in line
        )

    def log_offset(self) -> int:
        return self.log.stat().st_size

    # -- config ----------------------------------------------------------------------------

    def host_toml(self, host: FakeHost, name: str | None = None, **extra: object) -> str:
        """The `[hosts.NAME]` table of a gpudash config file that reaches `host` (for tests
        and benches that run the `gpudash` command): the one door to this server in a config
        file, as `host_config` is in code. `extra` keys are added or override these."""
        from tests.support.configs import host_table

        keys: dict[str, object] = {
            "address": "127.0.0.1",
            "port": host.port,
            "user": self.user,
            "identity_file": str(self.client_key),
            "known_hosts": str(self.known_hosts),
        }
        return host_table(name or host.name, **{**keys, **extra})

    def ssh_argv(self, host: FakeHost, *command: str) -> list[str]:
        """OpenSSH's client running `command` on `host`: the baseline benches compare with."""
        return [
            "ssh", "-p", str(host.port), "-i", str(self.client_key),
            "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "BatchMode=yes",
            "-F", "/dev/null", f"{self.user}@127.0.0.1", *command,
        ]  # fmt: skip

    def host_config(self, host: FakeHost, **overrides: object) -> Any:
        """A gpudash HostConfig that reaches `host` with the test key and known_hosts."""
        from gpudash.config.model import HostConfig

        settings: dict[str, Any] = {
            "name": host.name,
            "address": "127.0.0.1",
            "port": host.port,
            "user": self.user,
            "identity_files": (str(self.client_key),),
            "known_hosts": str(self.known_hosts),
            "connect_timeout": 5.0,
        }
        settings.update(overrides)
        return HostConfig(**settings)
