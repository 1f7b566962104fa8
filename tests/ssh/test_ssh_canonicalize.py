"""CanonicalizeHostname as OpenSSH does it (issue 23, item 20): the canonical name's `Host`
block applies. Each case runs `ssh -G`, a real `ssh` and gpudash side by side, against the
real test sshd, whose port is given only in the canonical name's block.

The names need a resolver that knows them: each command runs in a user + mount namespace
(`unshare -rm`) where a test hosts file is bind-mounted over /etc/hosts. glibc's files backend
matches an anchored name (`gpu8.example.internal.`, which ssh looks up) only when the file
spells it with the dot, so the file lists both spellings. The sshd runs outside, on the
shared loopback; a bastion it serves resolves names with the real /etc/hosts, so the jump case
follows a permitted CNAME to `localhost`, the one name both sides resolve.

A resolver that never answers gets a network namespace of its own (`unshare -rmn`), where a
socket bound to 127.0.0.1:53 takes the queries and drops them.

The configs name UserKnownHostsFile and pass `-F`: OpenSSH finds `~` in the passwd entry, not
in the isolated $HOME the tests run under.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.sshd import FakeHost, Sshd
from tests.support.tools import require

HOSTS = (
    "127.0.0.1 localhost\n"
    "127.0.0.1 gpu8.example.internal gpu8.example.internal.\n"
    "127.0.0.1 localhost gpu9.example.internal gpu9.example.internal.\n"
)
_IN_HOSTS = 'mount --bind "$0" /etc/hosts && exec "$@"'

# gpudash's own reading of ~/.ssh/config, printed as the `ssh -G` keys it is compared on
_RESOLVE = """
import asyncio, json, sys
from gpudash.transport.sshconfig import read_ssh_config

async def main():
    jump = sys.argv[2:] == ["jump"]
    c = await read_ssh_config(sys.argv[1], user=None, port=None, jump=jump, timeout=5)
    get = c.config.get
    print(json.dumps({"hostname": c.name, "port": str(get("Port", 22)),
                      "user": get("User"), "identityfile": get("IdentityFile", [])}))

asyncio.run(main())
"""

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def ns(tmp_path: Path) -> Run:
    """Run a command where /etc/hosts is HOSTS; fails (never skips) where this machine does
    not allow the namespace."""
    hosts = tmp_path / "hosts"
    hosts.write_text(HOSTS)

    def run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["unshare", "-rm", "sh", "-c", _IN_HOSTS, str(hosts), *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=os.environ.copy(),
        )

    try:
        probe = run("getent", "hosts", "gpu8.example.internal.")
    except FileNotFoundError:
        pytest.fail("unshare is not installed: apt-get install -y util-linux", pytrace=False)
    if probe.returncode != 0 or not probe.stdout.startswith("127.0.0.1"):
        why = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[0]
        pytest.fail(
            "these tests give /etc/hosts test names in a user + mount namespace "
            f"(`unshare -rm`), which this machine refused: {why}",
            pytrace=False,
        )
    return run


def cfg() -> str:
    return str(Path(os.environ["HOME"]) / ".ssh" / "config")


def write_ssh_config(text: str) -> None:
    ssh_dir = Path(os.environ["HOME"]) / ".ssh"
    ssh_dir.mkdir(exist_ok=True)
    (ssh_dir / "config").write_text(text)


def known_hosts(sshd: Sshd, *names: str) -> Path:
    """The test sshd's `[127.0.0.1]:port` lines plus `names` (as `[name]:port`) for its key."""
    path = Path(os.environ["HOME"]) / ".ssh" / "known_hosts"
    path.parent.mkdir(exist_ok=True)
    extra = "".join(f"{name} {sshd.host_public_key}\n" for name in names)
    path.write_text(sshd.known_hosts.read_text() + extra)
    return path


def ssh_g(ns: Run, *args: str) -> dict[str, object]:
    """What `ssh -G` resolves, on the keys gpudash is compared on."""
    run = ns("ssh", "-F", cfg(), "-G", *args)
    assert run.returncode == 0, run.stderr
    lines = [line.split(" ", 1) for line in run.stdout.splitlines() if " " in line]
    first = {key: value for key, value in reversed(lines)}
    return {
        "hostname": first["hostname"],
        "port": first["port"],
        "user": first["user"],
        # ssh adds ~/.ssh/id_* when the config names no key (gpudash leaves that to asyncssh)
        "identityfile": [
            value
            for key, value in lines
            if key == "identityfile" and not value.startswith("~/.ssh/id_")
        ],
    }


def gpudash_view(ns: Run, alias: str, *, jump: bool = False) -> dict[str, object]:
    run = ns(sys.executable, "-c", _RESOLVE, alias, *(["jump"] if jump else []))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def real_ssh(ns: Run, *args: str) -> subprocess.CompletedProcess[str]:
    opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=5"]
    return ns("ssh", "-F", cfg(), *opts, *args, "echo ok")


def gpudash_probe(
    ns: Run, tmp_path: Path, address: str, *, more: str = ""
) -> subprocess.CompletedProcess[str]:
    """`gpudash probe` of a host known only by `address`: everything else from ~/.ssh/config
    (`more`: lines added to its table, and tables of other hosts, which are not probed)."""
    name = address.split(".")[0]
    config = tmp_path / "gpudash.toml"
    config.write_text(
        f'[hosts.{name}]\naddress = "{address}"\nconnect_timeout = 5\n'
        f'network_targets = ["http://127.0.0.1:9/"]\n{more}'
    )
    return ns(sys.executable, "-m", "gpudash", "probe", "--config", str(config), name)


def canonical_block(sshd: Sshd, host: FakeHost, name: str, kh: Path) -> str:
    return (
        f"Host {name}\n  Port {host.port}\n  User {sshd.user}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {kh}\n"
    )


@pytest.mark.parametrize("mode", ["yes", "always"])
def test_the_canonical_names_block_gives_port_user_and_key_and_the_probe_answers(
    ns: Run, sshd: Sshd, fake_host: FakeHost, tmp_path: Path, mode: str
):
    kh = known_hosts(sshd, f"[gpu8.example.internal]:{fake_host.port}")
    write_ssh_config(
        f"CanonicalizeHostname {mode}\nCanonicalDomains example.net example.internal\n"
        # the first pass's block stays in force in the second (the first value wins)
        f"Host gpu8\n  IdentityFile {sshd.client_key}\n"
        + canonical_block(sshd, fake_host, "gpu8.example.internal", kh)
        # true only in the second pass, after the canonical block: its User must not win
        + "Match canonical\n  User nosuchuser\n",
    )
    expected = {
        "hostname": "gpu8.example.internal",
        "port": str(fake_host.port),
        "user": sshd.user,
        "identityfile": [str(sshd.client_key)],
    }
    assert ssh_g(ns, "gpu8") == expected
    assert gpudash_view(ns, "gpu8") == expected
    real = real_ssh(ns, "gpu8")
    assert real.stdout == "ok\n", real.stderr
    probe = gpudash_probe(ns, tmp_path, "gpu8")
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert probe.stdout.splitlines()[-1] == "1 of 1 hosts answered"


def test_fallback_local_no_fails_on_an_unknown_name_in_one_line_as_ssh_does(
    ns: Run, sshd: Sshd, fake_host: FakeHost, tmp_path: Path
):
    kh = known_hosts(sshd)
    write_ssh_config(
        "CanonicalizeHostname yes\nCanonicalDomains example.internal\n"
        "CanonicalizeFallbackLocal no\n"
        + canonical_block(sshd, fake_host, "gpu7", kh).replace("Host gpu7", "Host *"),
    )
    real = real_ssh(ns, "gpu7")
    assert real.returncode == 255
    assert real.stderr.strip() == 'ssh: Could not resolve host "gpu7"'
    probe = gpudash_probe(ns, tmp_path, "gpu7")
    assert probe.returncode != 0
    line = 'could not resolve host "gpu7" (tried gpu7.example.internal; '
    line += "CanonicalizeFallbackLocal no)"
    assert f"gpu7 │ FAILED   {line}" in probe.stdout.splitlines()
    assert "Traceback" not in probe.stderr


@pytest.mark.parametrize("max_dots", [0, 1])
def test_a_name_with_more_dots_than_canonicalize_max_dots_is_left_as_given(
    ns: Run, sshd: Sshd, fake_host: FakeHost, tmp_path: Path, max_dots: int
):
    kh = known_hosts(sshd, f"[gpu8.example.internal]:{fake_host.port}")
    write_ssh_config(
        "CanonicalizeHostname yes\nCanonicalDomains internal\n"
        f"CanonicalizeMaxDots {max_dots}\nIdentityFile {sshd.client_key}\nUser {sshd.user}\n"
        + canonical_block(sshd, fake_host, "gpu8.example.internal", kh),
    )
    canonical = max_dots >= 1  # "gpu8.example" has one dot
    view = ssh_g(ns, "gpu8.example")
    assert view["hostname"] == ("gpu8.example.internal" if canonical else "gpu8.example")
    assert view["port"] == (str(fake_host.port) if canonical else "22")
    assert gpudash_view(ns, "gpu8.example") == view
    real = real_ssh(ns, "gpu8.example")
    probe = gpudash_probe(ns, tmp_path, "gpu8.example")
    if canonical:
        assert real.stdout == "ok\n", real.stderr
        assert probe.returncode == 0, probe.stdout + probe.stderr
    else:  # not canonicalized: the name as given does not resolve, for either
        assert "Could not resolve hostname gpu8.example" in real.stderr
        assert probe.returncode != 0
        assert "FAILED   DNS name gpu8.example does not resolve" in probe.stdout


@pytest.mark.parametrize("via", ["ProxyJump", "ProxyCommand", "gpudash jump"])
@pytest.mark.parametrize("mode", ["yes", "always"])
def test_a_jump_target_is_canonicalized_only_under_always(
    ns: Run, sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, mode: str, via: str
):
    target, bastion = fake_hosts[0], fake_hosts[1]
    kh = known_hosts(sshd, f"[localhost]:{target.port}")
    write_ssh_config(
        f"CanonicalizeHostname {mode}\nCanonicalDomains example.internal\n"
        "CanonicalizePermittedCNAMEs *.example.internal:localhost\n"
        f"IdentityFile {sshd.client_key}\nUser {sshd.user}\n"
        + {
            "ProxyJump": "Host gpu9\n  ProxyJump bastion\n",
            # OpenSSH's own `ssh -W`; %h and %p are the final (canonical) name's
            "ProxyCommand": f"Host gpu9\n  ProxyCommand ssh -F {cfg()} -W %h:%p bastion\n",
        }.get(via, "")
        + f"Host bastion\n  HostName 127.0.0.1\n  Port {bastion.port}\n  User {sshd.user}\n"
        f"  UserKnownHostsFile {kh}\n"
        # gpu9.example.internal is an alias of localhost in the test hosts file
         + canonical_block(sshd, target, "localhost", kh),
    )
    # gpudash's `jump` is `ssh -J`; a bastion that is a gpudash host of its own
    gpudash_jump = via == "gpudash jump"
    j = ["-J", "bastion"] if gpudash_jump else []
    more = 'jump = "bastion"\n' + sshd.host_toml(bastion, "bastion") if gpudash_jump else ""
    always = mode == "always"
    view = ssh_g(ns, *j, "gpu9")
    assert view["hostname"] == ("localhost" if always else "gpu9")
    assert view["port"] == (str(target.port) if always else "22")
    assert gpudash_view(ns, "gpu9", jump=gpudash_jump) == view
    since = sshd.log_offset()
    real = real_ssh(ns, *j, "gpu9")
    probe = gpudash_probe(ns, tmp_path, "gpu9", more=more)
    if always:
        assert real.stdout == "ok\n", real.stderr
        assert probe.returncode == 0, probe.stdout + probe.stderr
        assert probe.stdout.splitlines()[-1] == "1 of 1 hosts answered"
    else:  # the bastion is asked for gpu9 itself, a name only this side knows
        assert real.returncode == 255 and probe.returncode != 0
        log = sshd.log.read_bytes()[since:].decode(errors="replace")
        asked = [line for line in log.splitlines() if line.startswith("connect_to gpu9: ")]
        assert len(asked) >= 2, log[-2000:]  # once by ssh, at least once by gpudash


# Each: (the name given, ~/.ssh/config with {key} and {port}); gpudash must resolve what
# `ssh -G` resolves. `Host` lines after canonicalization match the canonical name, tokens
# expand with it, `Match originalhost` still sees the name as given, `Match final` asks for
# the second pass even under `CanonicalizeHostname no`.
AGREE = {
    "match originalhost in the second pass": (
        "gpu8",
        "CanonicalizeHostname yes\nCanonicalDomains example.internal\nUser u\n"
        "Match canonical originalhost gpu8\n  Port {port}\n  IdentityFile {key}\n",
    ),
    "an anchored name is resolved as it is": (
        "gpu8.example.internal.",
        "CanonicalizeHostname yes\nCanonicalDomains nowhere.test\nUser u\n"
        "Host gpu8.example.internal\n  Port {port}\n",
    ),
    "a name in capitals is lowercased": (
        "GPU8",
        "CanonicalizeHostname yes\nCanonicalDomains example.internal\nUser u\n"
        "Host gpu8.example.internal\n  Port {port}\n",
    ),
    "match final without canonicalization": (
        "gpu8",
        "User u\nHost gpu8\n  HostName gpu8.example.internal\n"
        "Match final host gpu8.example.internal\n  Port {port}\n",
    ),
    "a second pass matches HostName when nothing was canonicalized": (
        "gpu-alias",
        "CanonicalizeHostname yes\nCanonicalDomains nowhere.test\nUser u\n"
        "Host gpu-alias\n  HostName Box.Example.Internal\n"
        "Host box.example.internal\n  Port {port}\n",
    ),
    "a CNAME is followed only where a rule permits it": (
        "gpu9",
        "CanonicalizeHostname yes\nCanonicalDomains example.internal\nUser u\n"
        "CanonicalizePermittedCNAMEs *.example.internal:*.example.com\n"
        "Host gpu9.example.internal\n  Port {port}\n",
    ),
    "a permitted CNAME is followed": (
        "gpu9",
        "CanonicalizeHostname yes\nCanonicalDomains example.internal\nUser u\n"
        "CanonicalizePermittedCNAMEs *.example.internal:localhost,*.example.com\n"
        "Host localhost\n  Port {port}\n",
    ),
    "an address is written out in full and matched so": (
        "127.1",
        "CanonicalizeHostname yes\nUser u\nHost 127.0.0.1\n  Port {port}\n",
    ),
    "the first pass's Port wins over the canonical block's": (
        "gpu8",
        "CanonicalizeHostname yes\nCanonicalDomains example.internal\nUser u\n"
        "Host gpu8\n  Port 2222\nHost gpu8.example.internal\n  Port {port}\n",
    ),
}


@pytest.mark.parametrize("case", list(AGREE))
def test_gpudash_resolves_what_ssh_g_resolves(ns: Run, sshd: Sshd, case: str):
    name, text = AGREE[case]
    write_ssh_config(text.format(key=sshd.client_key, port=4242))
    view = ssh_g(ns, name)
    assert gpudash_view(ns, name) == view
    assert view["port"] == ("2222" if "2222" in text else "4242")  # the case did what it says


def test_tokens_in_identity_file_expand_with_the_canonical_name(
    ns: Run, sshd: Sshd, fake_host: FakeHost
):
    kh = known_hosts(sshd, f"[gpu8.example.internal]:{fake_host.port}")
    write_ssh_config(
        "CanonicalizeHostname yes\nCanonicalDomains example.internal\n"
        "IdentityFile /keys/%h-%n\n"
        + canonical_block(sshd, fake_host, "gpu8.example.internal", kh),
    )
    # `ssh -G` prints IdentityFile unexpanded; the real ssh expands it when it loads the keys,
    # with the final host name (%h) and the name as given (%n)
    assert ssh_g(ns, "gpu8")["identityfile"] == ["/keys/%h-%n"]
    real = real_ssh(ns, "-v", "gpu8")
    assert "debug1: identity file /keys/gpu8.example.internal-gpu8 type -1" in real.stderr
    view = gpudash_view(ns, "gpu8")
    assert view["identityfile"] == ["/keys/gpu8.example.internal-gpu8"]
    assert view["port"] == str(fake_host.port)


# In a network namespace of its own: a resolver at 127.0.0.1:53 that takes queries and never
# answers (the wrapper binds the port and holds it unread while the command runs)
_SILENT_DNS = """
import socket, subprocess, sys
dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dns.bind(("127.0.0.1", 53))
sys.exit(subprocess.run(sys.argv[1:]).returncode)
"""
_IN_DNS = (
    'ip link set lo up && mount --bind "$0" /etc/resolv.conf && '
    'mount --bind "$1" /etc/nsswitch.conf || exit 97; shift; exec "$@"'
)


@pytest.mark.parametrize(
    ("ssh_config", "looked_up"),
    [
        ("CanonicalizeHostname yes\nCanonicalDomains example.internal\n", "gpu8.example.internal."),
        # no canonicalization: asyncssh's own lookup, in asyncio's default executor, once held
        # the exit for the resolver's 30 s after the host had failed at 2 s
        ("", "gpu8"),
    ],
)
def test_a_resolver_that_never_answers_fails_the_host_at_its_connect_timeout(
    tmp_path: Path, ssh_config: str, looked_up: str
):
    require("ip")
    (tmp_path / "resolv.conf").write_text("nameserver 127.0.0.1\noptions timeout:30 attempts:1\n")
    (tmp_path / "nsswitch.conf").write_text("hosts: dns\n")
    write_ssh_config(ssh_config)
    config = tmp_path / "gpudash.toml"
    config.write_text(
        '[hosts.gpu8]\naddress = "gpu8"\nconnect_timeout = 2\n'
        'network_targets = ["http://127.0.0.1:9/"]\n'
    )
    files = [str(tmp_path / "resolv.conf"), str(tmp_path / "nsswitch.conf")]
    dns = [sys.executable, "-c", _SILENT_DNS]
    gpudash = [sys.executable, "-m", "gpudash", "probe", "--config", str(config)]
    started = time.monotonic()
    run = subprocess.run(
        ["unshare", "-rmn", "sh", "-c", _IN_DNS, *files, *dns, *gpudash],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    elapsed = time.monotonic() - started
    if run.returncode == 97:
        pytest.fail(f"no network namespace with a test resolver here: {run.stderr}", pytrace=False)
    line = f"connect timed out after 2s (gpu8:22): resolving {looked_up} "
    assert f"gpu8 │ FAILED   {line}did not finish" in run.stdout.splitlines(), run.stdout
    assert run.returncode == 1
    # the lookup's thread, stuck for the resolver's 30 s, does not hold the exit
    assert elapsed < 10, elapsed
