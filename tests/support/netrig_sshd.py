"""The sshd of each NetRig host: its config, start, readiness, kill and restart.

A mixin of tests/support/netrig.py's NetRig, kept apart so each file stays small. Each host runs its
own `/usr/sbin/sshd -D` (inside its namespace through `ip netns exec`), with its own host
key and PidFile, SetEnv giving sessions the host's PATH (fake GPU tools first) and HOME.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support import netrig_net as net
from tests.support.sshd import SERVER_OPTIONS

if TYPE_CHECKING:
    from tests.support.netrig import RigHost

SSHD = Path("/usr/sbin/sshd")
READY_TIMEOUT_S = 15.0


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


class SshdControl:
    """Mixed into NetRig: it provides hosts, mode, workdir, the registry record and relays."""

    def _sshd_config(self, host: RigHost) -> Path:
        listen = [f"127.0.0.1:{host.backend_port}"]
        if not host.relayed:
            listen.append(f"{host.address}:{host.port}")
        path = f"{host.bin_dir}:/usr/local/bin:/usr/bin:/bin"
        defaults = [
            *(f"ListenAddress {a}" for a in listen),
            f"HostKey {host.root / 'host_ed25519'}",
            f"PidFile {host.root / 'sshd.pid'}",
            # The rig's key for every host, then the host's own file (HOME is the host's, set
            # below): what a direct copy's one-use key is added to, and removed from.
            f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}"
            f" {host.home / '.ssh' / 'authorized_keys'}",
            *SERVER_OPTIONS,
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
        if self.mode == "loopback" and hosts and "" not in self._relays:
            self._relay_update(hosts[0])

    def kill_sshd(self, host: RigHost | str | int, *, connections: bool = True) -> None:
        """Stop the host's sshd listener (new connections are refused) and by default its
        open connections too (they drop mid-session)."""
        host = self.host(host)
        if host.proc is None:
            return
        children = children_of(host.proc.pid)
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


def children_of(pid: int) -> list[int]:
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
