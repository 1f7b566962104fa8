"""Network plumbing for tests/support/netrig.py: namespaces, the bridge, and cleaning up after runs.

Kept apart from the rig's API because it is the part that touches the machine's network: every
name it creates carries the run id (`gd<run>...`), every run is recorded in a registry file,
and a later run removes what a dead run left behind (a SIGKILLed pytest never reaches its
atexit handler).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

IP = shutil.which("ip") or "/usr/sbin/ip"
REGISTRY = Path("/run/gpudash-netrig") if os.geteuid() == 0 else Path("/tmp/gpudash-netrig")
# Second octets tried for the rig's 10.X.0.0/16: 213 first (the documented one), then others,
# so two runs at once, or a machine already on 10.213/16, never share a subnet.
SUBNET_OCTETS = (213, *range(200, 213), *range(214, 251))


class NetError(RuntimeError):
    """An `ip`/`tc` command failed; the message is its command line and stderr."""


def ip(*args: str, stdin: str | None = None, check: bool = True) -> str:
    """Run `ip ARGS` (or `tc` when args[0] == "tc"); returns stdout."""
    argv = [shutil.which("tc") or "tc", *args[1:]] if args[0] == "tc" else [IP, *args]
    run = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if check and run.returncode != 0:
        raise NetError(f"{' '.join(argv)}: {run.stderr.strip() or run.returncode}")
    return run.stdout


def can_create_namespaces() -> str | None:
    """None when namespaces work here, else why not (the fallback's one-line reason)."""
    if os.environ.get("GPUDASH_NETRIG") == "loopback":
        return "GPUDASH_NETRIG=loopback"
    if shutil.which("ip") is None and not Path(IP).exists():
        return "iproute2 (`ip`) is not installed"
    probe = f"gdprobe{secrets.token_hex(3)}"
    try:
        ip("netns", "add", probe)
    except NetError as exc:
        return f"cannot create network namespaces ({exc})"
    try:  # a container may allow the namespace but not entering it (no CAP_SYS_ADMIN)
        ip("netns", "exec", probe, "true")
        ip("link", "add", f"{probe}v", "type", "veth", "peer", "name", "eth0", "netns", probe)
        ip("link", "add", f"{probe}b", "type", "bridge")
    except NetError as exc:
        return f"cannot use network namespaces ({exc})"
    finally:
        ip("link", "del", f"{probe}b", check=False)
        ip("link", "del", f"{probe}v", check=False)
        ip("netns", "del", probe, check=False)
    return None


def has_netem(netns: str, dev: str) -> bool:
    """Whether this kernel has the netem qdisc (many minimal VM kernels do not)."""
    added = subprocess.run(
        ["tc", "-n", netns, "qdisc", "add", "dev", dev, "root", "netem", "delay", "0ms"],
        capture_output=True,
    )
    if added.returncode != 0:
        return False
    ip("tc", "-n", netns, "qdisc", "del", "dev", dev, "root", check=False)
    return True


def free_subnet() -> ipaddress.IPv4Network:
    """A 10.X.0.0/16 that no route or address on this machine touches."""
    used = []
    for line in ip("-4", "route", "show", "table", "all").splitlines():
        word = line.split()[0] if line.split() else ""
        if word in ("broadcast", "local", "unreachable", "blackhole", "prohibit"):
            word = line.split()[1]
        with contextlib.suppress(ValueError):
            used.append(ipaddress.ip_network(word, strict=False))
    for octet in SUBNET_OCTETS:
        net = ipaddress.ip_network(f"10.{octet}.0.0/16")
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise NetError("no free 10.X.0.0/16 for the rig: every candidate is routed on this machine")


def new_run_id() -> str:
    taken = ip("netns", "list", check=False)
    while True:
        run = secrets.token_hex(2)
        if f"gd{run}-" not in taken and not (REGISTRY / f"{run}.json").exists():
            return run


# -- the run registry ------------------------------------------------------------------------


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """Machine-wide lock for choosing a subnet and creating the links on it."""
    REGISTRY.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (REGISTRY / "lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def record(run: str, data: dict) -> None:
    REGISTRY.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = REGISTRY / f"{run}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def forget(run: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (REGISTRY / f"{run}.json").unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def records() -> list[dict]:
    found = []
    for path in sorted(REGISTRY.glob("*.json")) if REGISTRY.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            found.append(json.loads(path.read_text()))
    return found


def reap_stale(*, persistent: bool = False) -> list[str]:
    """Tear down rigs whose owner died (or, with `persistent`, those `bench.netrig up` left)."""
    gone = []
    for rec in records():
        owner = rec.get("pid")
        if rec.get("persistent") and not persistent:
            continue
        if not rec.get("persistent") and owner and _alive(owner):
            continue
        teardown(rec)
        gone.append(rec["run"])
    return gone


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def namespace_pids(netns: str) -> list[int]:
    out = ip("netns", "pids", netns, check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def teardown(rec: dict) -> None:
    """Remove everything one rig made; safe to call twice and on half-built rigs."""
    kill_pids([int(p) for p in rec.get("pids", [])])
    for netns in rec.get("netns", []):
        kill_pids(namespace_pids(netns))
    for link in rec.get("links", []):
        ip("link", "del", link, check=False)
    for netns in rec.get("netns", []):
        ip("netns", "del", netns, check=False)
        shutil.rmtree(Path("/etc/netns") / netns, ignore_errors=True)
    for route in rec.get("routes", []):
        ip("route", "del", *route.split(), check=False)
    forget(rec["run"])


# -- building --------------------------------------------------------------------------------


def build(
    run: str, bridge: str, subnet: ipaddress.IPv4Network, names: list[str], rec: dict
) -> list[str]:
    """A bridge with the subnet's first address, and one namespace per name on a veth.

    Returns the address of each namespace. `rec` (the registry record) learns each object
    before it is created, so a crash halfway still leaves a record that tears it all down.
    """
    base = int(subnet.network_address)
    addresses = [str(ipaddress.ip_address(base + 10 + i)) for i in range(len(names))]
    rec["links"].append(bridge)
    rec["netns"].extend(names)
    rec["links"].extend(f"gd{run}v{i}" for i in range(len(names)))
    record(run, rec)
    cmds = [
        f"link add {bridge} type bridge",
        f"addr add {subnet.network_address + 1}/16 dev {bridge}",
    ]
    cmds.append(f"link set {bridge} up")
    for i, netns in enumerate(names):
        cmds += [
            f"netns add {netns}",
            f"link add gd{run}v{i} type veth peer name eth0 netns {netns}",
            f"link set gd{run}v{i} master {bridge} up",
        ]
    ip("-batch", "-", stdin="\n".join(cmds) + "\n")
    for netns, address in zip(names, addresses, strict=True):
        ip(
            "-n",
            netns,
            "-batch",
            "-",
            stdin=f"link set lo up\naddr add {address}/16 dev eth0\nlink set eth0 up\n",
        )
        # No default route: nothing a host runs can leave the rig. A resolv.conf pointing at
        # the namespace's own loopback makes name lookups fail locally instead of querying
        # the machine's resolver (`ip netns exec` bind-mounts /etc/netns/NAME/* over /etc).
        etc = Path("/etc/netns") / netns
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "resolv.conf").write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    return addresses
