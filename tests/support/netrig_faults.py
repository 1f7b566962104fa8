"""The faults a NetRig can inflict, and the gpudash config that reaches its hosts.

A mixin of tests/support/netrig.py's NetRig, kept apart so each file stays small. Every fault is
undone by restore()/reset(), so one rig can serve a whole test session.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support import netrig_net as net
from tests.support.configs import host_table, table

if TYPE_CHECKING:
    from tests.support.netrig import RigHost

_CUT_RULE = ("rule", "add", "pref", "100", "blackhole")


class Faults:
    """Mixed into NetRig: it provides hosts, mode, run, workdir and the sshd helpers."""

    hosts: list[RigHost]
    _links: dict[str, dict]

    # -- config ------------------------------------------------------------------------------

    def config_toml(
        self: Any,
        *,
        only: list[str] | None = None,
        per_host: dict[str, dict[str, object]] | None = None,
        defaults: dict[str, object] | None = None,
        **host_overrides: object,
    ) -> str:
        """A gpudash config for the rig's hosts (or `only` these names).

        `host_overrides` apply to every host block, `per_host[name]` to one. Network checks
        default to a closed loopback port, so a probe never reaches for the internet.
        """
        text = ""
        if defaults:
            text += table("defaults", defaults)
        for h in self.hosts:
            if only is not None and h.name not in only:
                continue
            keys: dict[str, object] = {
                "address": h.address,
                "port": h.port,
                "user": self.user,
                "identity_file": str(self.client_key),
                "known_hosts": str(self.known_hosts),
                "network_targets": ["http://127.0.0.1:9/"],
                "connect_timeout": 5,
                **host_overrides,
                **(per_host or {}).get(h.name, {}),
            }
            text += "\n" + host_table(h.name, **{k: v for k, v in keys.items() if v is not None})
        return text

    def client_command(self: Any, argv: list[str]) -> list[str]:
        """argv run from the rig's client namespace: on the bridge, no resolver but its own
        loopback, no route out. In loopback mode argv runs as it is."""
        if self.client_netns is None:
            return list(argv)
        return [net.IP, "netns", "exec", self.client_netns, *argv]

    # -- link faults -------------------------------------------------------------------------

    def cut(self: Any, host: Any) -> None:
        """Silent drop: the host answers nothing, to new connections and open ones alike."""
        host = self.host(host)
        if host.netns:
            if "blackhole" not in net.ip("-n", host.netns, "rule", "show"):
                net.ip("-n", host.netns, *_CUT_RULE)
        else:
            self._links.setdefault(host.name, {})["cut"] = True
            self._relay_update(host)

    def unroute(self: Any, host: Any) -> None:
        """No route to the host from the client (root and client namespace): EHOSTUNREACH."""
        host = self.host(host)
        if host.netns is None:
            raise NotImplementedError("netrig: 'no route' needs network namespaces")
        route = f"unreachable {host.address}/32"
        if route not in self._rec["routes"]:
            self._rec["routes"].append(route)
            net.record(self.run, self._rec)
            net.ip("route", "add", *route.split())
            net.ip("-n", self.client_netns, "route", "add", *route.split())

    def restore(self: Any, host: Any) -> None:
        """Undo cut() and unroute() for the host."""
        host = self.host(host)
        if host.netns:
            while "blackhole" in net.ip("-n", host.netns, "rule", "show"):
                net.ip("-n", host.netns, "rule", "del", "pref", "100")
            route = f"unreachable {host.address}/32"
            if route in self._rec["routes"]:
                net.ip("route", "del", *route.split(), check=False)
                net.ip("-n", self.client_netns, "route", "del", *route.split(), check=False)
                self._rec["routes"].remove(route)
                net.record(self.run, self._rec)
        elif self._links.get(host.name, {}).get("cut"):
            self._links[host.name]["cut"] = False
            self._relay_update(host)

    def set_link(self: Any, host: Any, delay_ms: float = 0, loss_pct: float = 0) -> None:
        """Add `delay_ms` of round-trip time and `loss_pct` packet loss to the host's link.

        netem where the kernel has it (every packet, open connections included); otherwise
        the userspace relay (tests/support/netrelay.py), which in namespace mode is put in front of
        the sshd on first use: connections already open then keep their direct path.
        """
        host = self.host(host)
        if host.netns and self.netem:
            if delay_ms or loss_pct:
                net.ip(
                    "tc", "-n", host.netns, "qdisc", "replace", "dev", "eth0", "root", "netem",
                    "delay", f"{delay_ms}ms", "loss", f"{loss_pct}%",
                )  # fmt: skip
            else:
                net.ip("tc", "-n", host.netns, "qdisc", "del", "dev", "eth0", "root", check=False)
            return
        if not host.relayed:
            if delay_ms or loss_pct:
                self._put_relay_in_front(host, delay_ms=delay_ms, loss_pct=loss_pct)
            return
        self._links.setdefault(host.name, {}).update(delay_ms=delay_ms, loss_pct=loss_pct)
        self._relay_update(host)

    def limit_client(self: Any, mib_per_s: float | None) -> None:
        """Cap the client namespace's link at `mib_per_s` each way (tbf on both ends of its
        veth: its eth0 sends, the bridge's port towards it receives); None lifts the cap.
        What crosses between hosts is bridged port to port and never meets these qdiscs, so
        the hosts' own link stays unlimited. Namespace mode only."""
        if self.client_netns is None:
            raise NotImplementedError("netrig: a client link limit needs network namespaces")
        self._limit(len(self.hosts), self.client_netns, mib_per_s)  # the client is built last

    def limit_host(self: Any, host: Any, mib_per_s: float | None) -> None:
        """Cap a host's own link at `mib_per_s` each way, as its NIC would: what it sends and
        what it receives, from any other namespace. Namespace mode only."""
        host = self.host(host)
        if host.netns is None:
            raise NotImplementedError("netrig: a host link limit needs network namespaces")
        self._limit(host.index, host.netns, mib_per_s)

    def _limit(self: Any, index: int, netns: str, mib_per_s: float | None) -> None:
        port = f"gd{self.run}v{index}"  # the bridge's port towards namespace `index`
        ends = [("-n", netns, "eth0"), ("", "", port)]
        for flag, ns, dev in ends:
            where = [flag, ns] if flag else []
            if mib_per_s is None:
                net.ip("tc", *where, "qdisc", "del", "dev", dev, "root", check=False)
                continue
            kbit = int(mib_per_s * 8 * 1024 * 1024 / 1000)
            net.ip(
                "tc", *where, "qdisc", "replace", "dev", dev, "root", "tbf",
                "rate", f"{kbit}kbit", "burst", "64kb", "latency", "100ms",
            )  # fmt: skip

    def client_bytes(self: Any) -> int:
        """Bytes the client namespace's link has carried so far, both directions."""
        stats = Path(f"/sys/class/net/gd{self.run}v{len(self.hosts)}/statistics")
        return sum(int((stats / f"{d}_bytes").read_text()) for d in ("rx", "tx"))

    def reset(self: Any) -> None:
        """Every host back to pristine: no fault, default sshd, only the fake GPU tools."""
        for host in self.hosts:
            self.restore(host)
            link = self._links.get(host.name, {})
            if link.get("delay_ms") or link.get("loss_pct") or (host.netns and self.netem):
                self.set_link(host, 0, 0)
            if host.options or host.proc is None or host.proc.poll() is not None:
                host.options = []
                self.restart_sshd(host)
            self.reset_files(host)

    # -- the relay ---------------------------------------------------------------------------

    def set_links(self: Any, hosts: list, delay_ms: float = 0, loss_pct: float = 0) -> None:
        """set_link on many hosts at once: relays are started side by side (100 hosts take
        a few seconds instead of ~20 one after another)."""
        hosts = [self.host(h) for h in hosts]
        if self.netem or not (delay_ms or loss_pct):
            for host in hosts:
                self.set_link(host, delay_ms, loss_pct)
            return
        fresh = [h for h in hosts if not h.relayed]
        self._put_relay_in_front(*fresh, delay_ms=delay_ms, loss_pct=loss_pct)
        for host in hosts:
            if host not in fresh:
                self.set_link(host, delay_ms, loss_pct)

    def _put_relay_in_front(self: Any, *hosts: Any, delay_ms: float = 0, loss_pct: float = 0):
        """Namespace mode without netem: sshd leaves host:22 to a relay that forwards to it
        on the namespace's 127.0.0.1:22. Open connections are not touched."""
        for host in hosts:
            self.kill_sshd(host, connections=False)
            host.relayed = True
            self._spawn(host)
            self._links[host.name] = {"listening": True, "delay_ms": delay_ms}
            self._links[host.name]["loss_pct"] = loss_pct
        waits = [self._relay_update(host, wait=False) for host in hosts]
        for wait in waits:
            wait()
        self._wait_ready(list(hosts))

    def _relay_update(self: Any, host: Any, *, wait: bool = True) -> Any:
        """Write the relay's control file, (re)load it, and wait for its acknowledgement
        (or, with wait=False, return the function that waits)."""
        if host.netns is None:  # loopback: one relay in front of every host
            hosts, key, netns = self.hosts, "", None
        else:
            hosts, key, netns = [host], host.name, host.netns
        self._gen += 1
        routes = []
        for h in hosts:
            link = self._links.get(h.name, {})
            routes.append(
                {
                    "listen": [h.address, h.port],
                    "to": ["127.0.0.1", h.backend_port],
                    "delay_ms": link.get("delay_ms", 0),
                    "loss_pct": link.get("loss_pct", 0),
                    "cut": link.get("cut", False),
                    "listening": link.get("listening", True),
                }
            )
        control = self.workdir / f"relay{('-' + key) if key else ''}.json"
        control.write_text(json.dumps({"gen": self._gen, "routes": routes}))
        proc = self._relays.get(key)
        if proc is None or proc.poll() is not None:
            argv = [sys.executable, str(net_relay_path()), str(control)]
            if netns:
                argv = [net.IP, "netns", "exec", netns, *argv]
            with (self.workdir / f"relay{key}.log").open("ab") as log:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    start_new_session=self.persistent,
                )  # fmt: skip
            self._relays[key] = proc
            self._rec["pids"].append(proc.pid)
            net.record(self.run, self._rec)
        else:
            proc.send_signal(signal.SIGHUP)
        ack, gen = control.with_name(control.name + ".ack"), self._gen

        def acknowledged() -> None:
            deadline = time.monotonic() + 10
            while True:
                with contextlib.suppress(OSError, ValueError):
                    if json.loads(ack.read_text())["gen"] == gen:
                        return
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.workdir / f"relay{key}.log").read_text(errors="replace")
                    raise RuntimeError(f"netrig: relay did not take its settings:\n{log[-1500:]}")
                time.sleep(0.01)

        if not wait:
            return acknowledged
        acknowledged()
        return None


def net_relay_path():
    from tests.support.netrig import RELAY

    return RELAY
