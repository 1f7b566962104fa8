"""~/.ssh/config read as OpenSSH reads it (issue 23, items 21-22), each case checked three
ways over the real test sshd: what `ssh -G` resolves, that a real `ssh` connects with it,
and that gpudash connects (or refuses) the same way."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from gpudash.transport.base import TransportError
from gpudash.transport.ssh import SshTransport
from tests.support.sshd import FakeHost, Sshd, run_script


def cfg() -> str:
    # OpenSSH finds ~ in the passwd entry, not $HOME: name the isolated config explicitly
    return str(Path(os.environ["HOME"]) / ".ssh" / "config")


def ssh_g(alias: str, option: str) -> str:
    argv = ["ssh", "-F", cfg(), "-G", alias]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return next(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith(option + " "))


def real_ssh(alias: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "ssh",
            "-F",
            cfg(),
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            alias,
            "echo ok",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )


def alias_config(sshd: Sshd, fake_host: FakeHost, home: Path, extra: str) -> None:
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(exist_ok=True)
    (ssh_dir / "config").write_text(
        f"Host gpu-alias\n  HostName 127.0.0.1\n  Port {fake_host.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n{extra}"
    )


def gpudash_host(sshd: Sshd, fake_host: FakeHost):
    host = sshd.host_config(
        fake_host, name="gpu", address="gpu-alias", port=None, user=None, identity_files=()
    )
    return dataclasses.replace(host, known_hosts=None)


async def test_tokens_in_user_known_hosts_file_are_expanded_as_openssh_does(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    where = isolated_home / ".ssh"
    line = f"  UserKnownHostsFile {where}/kh_%u_%r_%h_%p_%%\n"
    alias_config(sshd, fake_host, isolated_home, line)
    user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    expanded = where / f"kh_{user}_{sshd.user}_127.0.0.1_{fake_host.port}_%"
    assert ssh_g("gpu-alias", "userknownhostsfile") == str(expanded)
    expanded.write_text(sshd.known_hosts.read_text())
    assert real_ssh("gpu-alias").stdout == "ok\n"
    async with SshTransport(gpudash_host(sshd, fake_host)) as t:
        assert (await run_script(t, "echo $GPUDASH_TEST_HOST\n"))[0] == b"h0\n"


async def test_the_refusal_hint_names_the_expanded_known_hosts_file(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    # %d: the home directory (gpudash's $HOME; see hostkeys.known_hosts_tokens)
    alias_config(sshd, fake_host, isolated_home, "  UserKnownHostsFile %d/.ssh/kh_%p_%n\n")
    expanded = isolated_home / ".ssh" / f"kh_{fake_host.port}_gpu-alias"
    assert real_ssh("gpu-alias").returncode == 255  # unknown key under strict checking
    with pytest.raises(TransportError) as err:
        await SshTransport(gpudash_host(sshd, fake_host)).connect()
    assert err.value.reason.endswith(f">> {expanded}")


@pytest.mark.parametrize("value", ["/dev/null", "none"])
async def test_a_known_hosts_file_that_keeps_nothing_is_not_offered_as_the_fix(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path, value: str
):
    alias_config(sshd, fake_host, isolated_home, f"  UserKnownHostsFile {value}\n")
    assert real_ssh("gpu-alias").returncode == 255
    with pytest.raises(TransportError) as err:
        await SshTransport(gpudash_host(sshd, fake_host)).connect()
    reason = err.value.reason
    assert ">> /dev/null" not in reason and ">> none" not in reason
    assert "no known_hosts file keeps keys for it" in reason
    assert 'set known_hosts = "~/.ssh/known_hosts"' in reason
