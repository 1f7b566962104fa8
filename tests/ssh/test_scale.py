"""Scale, small enough for the suite: 100 real SSH hosts probed by the installed CLI within
bounded concurrency and memory; and the per-host costs that made 1000 hosts take a GB.

The 1000-host runs (CLI and app) are python -m bench.bench_scale; this is the 100-host version.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from gpudash.transport.hostkeys import HostKeyCheck
from tests.support.manyhosts import LoopbackFleet
from tests.support.peakrss import gpudash_argv, peak_kib


def run_measured(rss_file: Path, *args: str) -> tuple[int, bytes, bytes, int]:
    """Run `gpudash ARGS`: exit status, stdout, stderr and its own peak RSS in KiB."""
    proc = subprocess.run(gpudash_argv(rss_file, *args), capture_output=True)
    return proc.returncode, proc.stdout, proc.stderr, peak_kib(rss_file)


def test_a_hundred_hosts_all_answer_with_bounded_handshakes_and_little_memory(
    tmp_path: Path,
) -> None:
    with LoopbackFleet(100, tmp_path) as fleet:
        config = fleet.config(tmp_path / "c.toml", concurrency=32, max_handshakes=8)
        start = time.monotonic()
        rc, out, err, peak = run_measured(
            tmp_path / "rss", "probe", "--json", "--config", str(config)
        )
        elapsed = time.monotonic() - start
        refusals = fleet.server_refusals()
    assert rc == 0, err.decode()[-2000:]
    hosts = json.loads(out)["hosts"]
    assert len(hosts) == 100
    assert [h["name"] for h in hosts if h["state"] != "ready"] == []
    assert not [h["name"] for h in hosts if any(s["error"] for s in h["sections"].values())]
    assert not refusals, f"sshd refused or dropped connections: {dict(refusals)}"
    assert peak < 200 * 1024, f"peak RSS {peak / 1024:.0f} MB"
    assert elapsed < 60


def test_every_connection_shares_one_parse_of_an_unchanged_known_hosts_file(
    tmp_path: Path,
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("".join(f"[127.0.0.1]:{2000 + i} ssh-ed25519 {KEY}\n" for i in range(500)))
    checks = [HostKeyCheck("strict", str(known)) for _ in range(3)]
    for check in checks:
        check.configure(None)
    # Each check wraps the parse to match by name only (hostkeys._ByName); the parse is one.
    first = checks[0].asyncssh_known_hosts()._by_name
    assert all(c.asyncssh_known_hosts()._by_name is first for c in checks)
    with known.open("a") as f:  # accept-new appends: the next connection sees the new key
        f.write(f"[127.0.0.1]:9999 ssh-ed25519 {KEY}\n")
    later = HostKeyCheck("strict", str(known))
    later.configure(None)
    known_now = later.asyncssh_known_hosts()
    assert known_now is not None and known_now._by_name is not first
    assert known_now is not None and known_now.match("127.0.0.1", "127.0.0.1", 9999)[0]


KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOkS1hjyb7jrZqvS4l0uMXwNOp+fwFgnJvXx0vGk7Sxd"


def test_importing_the_ssh_transport_starts_no_subprocess() -> None:
    """asyncssh's liboqs lookup ran ldconfig, gcc and ld on every gpudash start."""
    code = (
        "import subprocess\n"
        "spawned = []\n"
        "real = subprocess.Popen.__init__\n"
        "def spy(self, args, *a, **k):\n"
        "    spawned.append(args)\n"
        "    real(self, args, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "import gpudash.transport.ssh\n"
        "print(spawned)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_asyncssh_libraries_are_still_found_where_the_dynamic_linker_looks(
    tmp_path: Path, monkeypatch
) -> None:
    import ctypes.util

    from gpudash.transport import sharedlibs

    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    (tmp_path / "liboqs.so.7").write_bytes(b"")
    assert sharedlibs.find("oqs") == sharedlibs.find("liboqs") == "liboqs.so.7"
    real = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    if "libnettle.so" in real:  # the system's own: the same name ldconfig gives
        assert ctypes.util.find_library("nettle") in real
