"""~/.ssh/config read as OpenSSH reads it (issue 23, items 22, 23, 25), each case checked
against what `ssh -G` resolves and what a real `ssh` does with the same files, over the real
test sshd; gpudash must connect (or refuse, with the reason) the same way.

The configs name UserKnownHostsFile explicitly: OpenSSH finds `~` in the passwd entry, not in
the isolated $HOME the tests run under."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest

from gpudash.transport.base import TransportError
from gpudash.transport.ssh import SshTransport
from tests.support.sshd import FakeHost, Sshd, run_script


def cfg() -> str:
    return str(Path(os.environ["HOME"]) / ".ssh" / "config")


def ssh_g(alias: str) -> list[str]:
    argv = ["ssh", "-F", cfg(), "-G", alias]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()


def real_ssh(alias: str, *options: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", cfg(), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    return subprocess.run(
        [*argv, *options, alias, "echo ok"], capture_output=True, text=True, timeout=30
    )


def write_config(sshd: Sshd, fake_host: FakeHost, home: Path, body: str, *, name="127.0.0.1"):
    """`Host gpu-alias` reaching fake_host as `name`, with `body` lines added; known_hosts
    holds the test sshd's `[127.0.0.1]:port` entries only."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(exist_ok=True)
    (ssh_dir / "known_hosts").write_text(sshd.known_hosts.read_text())
    (ssh_dir / "config").write_text(
        f"Host gpu-alias\n  HostName {name}\n  Port {fake_host.port}\n  User {sshd.user}\n"
        f"  UserKnownHostsFile {ssh_dir / 'known_hosts'}\n  IdentitiesOnly yes\n{body}"
    )


def gpudash_host(sshd: Sshd, fake_host: FakeHost, **overrides: object):
    """gpudash's host `gpu` at `gpu-alias`, everything else from ~/.ssh/config."""
    host = sshd.host_config(
        fake_host, name="gpu", address="gpu-alias", port=None, user=None, identity_files=()
    )
    return dataclasses.replace(host, known_hosts=None, **overrides)


async def echo(host) -> bytes:
    async with SshTransport(host) as t:
        return (await run_script(t, "echo $GPUDASH_TEST_HOST\n"))[0]


# -- item 22: a missing IdentityFile is skipped ----------------------------------------------


async def test_a_missing_identity_file_in_ssh_config_is_skipped_as_openssh_does(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    missing = isolated_home / ".ssh" / "id_work"  # a shared config naming a key this box lacks
    body = f"  IdentityFile {missing}\n  IdentityFile {sshd.client_key}\n"
    write_config(sshd, fake_host, isolated_home, body)
    assert [x for x in ssh_g("gpu-alias") if x.startswith("identityfile ")] == [
        f"identityfile {missing}",
        f"identityfile {sshd.client_key}",
    ]
    assert real_ssh("gpu-alias").stdout == "ok\n"
    assert await echo(gpudash_host(sshd, fake_host)) == b"h0\n"


async def test_a_missing_identity_file_in_gpudash_config_is_skipped_as_ssh_i_is(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    missing = str(isolated_home / "gone_ed25519")
    write_config(sshd, fake_host, isolated_home, "")
    assert real_ssh("gpu-alias", "-i", missing, "-i", str(sshd.client_key)).stdout == "ok\n"
    host = gpudash_host(sshd, fake_host, identity_files=(missing, str(sshd.client_key)))
    assert await echo(host) == b"h0\n"


async def test_when_every_identity_file_is_missing_the_refusal_names_them(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    missing = isolated_home / ".ssh" / "id_work"
    write_config(sshd, fake_host, isolated_home, f"  IdentityFile {missing}\n")
    assert "Permission denied" in real_ssh("gpu-alias").stderr
    with pytest.raises(TransportError) as err:
        await SshTransport(gpudash_host(sshd, fake_host)).connect()
    assert err.value.reason.startswith(f"gpu: auth failed as {sshd.user}@127.0.0.1:")
    assert err.value.reason.endswith(f"(not found: {missing})")


async def test_an_identity_file_that_is_a_fifo_is_still_refused_not_skipped(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    fifo = isolated_home / "key_fifo"
    os.mkfifo(fifo)
    write_config(sshd, fake_host, isolated_home, f"  IdentityFile {fifo}\n")
    with pytest.raises(TransportError) as err:
        await SshTransport(gpudash_host(sshd, fake_host)).connect()
    assert err.value.reason == f"gpu: {fifo}: not a regular file (a FIFO)"


# -- item 23: a key known only under the IP does not vouch for a name ------------------------


async def test_a_key_known_only_under_the_ip_is_refused_for_a_host_reached_by_name(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    body = f"  IdentityFile {sshd.client_key}\n"
    write_config(sshd, fake_host, isolated_home, body, name="localhost")
    assert "hostname localhost" in ssh_g("gpu-alias")
    for check_host_ip in ("no", "yes"):  # CheckHostIP only warns about the IP's entry
        refused = real_ssh("gpu-alias", "-o", f"CheckHostIP={check_host_ip}")
        assert refused.returncode == 255 and "Host key verification failed" in refused.stderr
    with pytest.raises(TransportError) as err:
        await SshTransport(gpudash_host(sshd, fake_host)).connect()
    assert err.value.reason.startswith(f"gpu: host key unknown for [localhost]:{fake_host.port}")


async def test_the_same_ip_entry_still_trusts_the_host_reached_by_its_address(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    write_config(sshd, fake_host, isolated_home, f"  IdentityFile {sshd.client_key}\n")
    assert real_ssh("gpu-alias").stdout == "ok\n"
    assert await echo(gpudash_host(sshd, fake_host)) == b"h0\n"


@pytest.mark.parametrize("portless", [True, False])
async def test_host_key_alias_is_looked_up_as_written_without_the_port(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path, portless: bool
):
    body = f"  IdentityFile {sshd.client_key}\n  HostKeyAlias gpu-key\n"
    write_config(sshd, fake_host, isolated_home, body, name="localhost")
    entry = "gpu-key" if portless else f"[gpu-key]:{fake_host.port}"
    (isolated_home / ".ssh" / "known_hosts").write_text(f"{entry} {sshd.host_public_key}\n")
    assert "hostkeyalias gpu-key" in ssh_g("gpu-alias")
    assert (real_ssh("gpu-alias").returncode == 0) is portless
    if portless:
        assert await echo(gpudash_host(sshd, fake_host)) == b"h0\n"
    else:
        with pytest.raises(TransportError) as err:
            await SshTransport(gpudash_host(sshd, fake_host)).connect()
        assert err.value.reason.startswith("gpu: host key unknown for gpu-key ")


# -- item 25: a failing ProxyCommand is reported as itself -----------------------------------


async def test_a_failing_proxy_command_is_reported_with_its_stderr_line(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    proxy = "sh -c 'echo \"bastion.example: Name or service not known\" >&2; exit 1'"
    body = f"  IdentityFile {sshd.client_key}\n  ProxyCommand {proxy}\n"
    write_config(sshd, fake_host, isolated_home, body)
    real = real_ssh("gpu-alias")
    assert real.returncode == 255
    assert real.stderr.splitlines()[0] == "bastion.example: Name or service not known"
    started = time.monotonic()
    with pytest.raises(TransportError) as err:
        await SshTransport(gpudash_host(sshd, fake_host, connect_timeout=20.0)).connect()
    assert err.value.reason == (
        "gpu: ProxyCommand failed (exit status 1): bastion.example: Name or service not known"
    )
    assert time.monotonic() - started < 5  # not retried as a MaxStartups drop until timeout


async def test_a_working_proxy_command_carries_the_connection(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    # the proxy is OpenSSH's own `ssh -W` through another port of the test sshd, with %h %p
    bastion = sshd.hosts[1]
    jump = (
        f"ssh -F /dev/null -i {sshd.client_key} -o BatchMode=yes "
        f"-o UserKnownHostsFile={sshd.known_hosts} -p {bastion.port} -W %h:%p "
        f"{sshd.user}@127.0.0.1"
    )
    write_config(
        sshd, fake_host, isolated_home, f"  IdentityFile {sshd.client_key}\n  ProxyCommand {jump}\n"
    )
    assert real_ssh("gpu-alias").stdout == "ok\n"
    transport = SshTransport(gpudash_host(sshd, fake_host))
    async with transport as t:
        assert (await run_script(t, "echo $GPUDASH_TEST_HOST\n"))[0] == b"h0\n"
        proxies = list(t._proxies)
    assert len(proxies) == 1 and proxies[0]._proc is not None
    assert proxies[0]._proc.returncode is not None  # ended with the transport, not leaked


# -- item 24: a `user@host:port` jump uses the bastion's own ~/.ssh/config ------------------


async def test_an_adhoc_jump_uses_the_bastions_own_identity_file_as_ssh_j_does(
    tmp_path: Path, isolated_home: Path
):
    import asyncssh

    # a server of its own: the bastion port accepts only the bastion's key
    bastion_key = tmp_path / "bastion_ed25519"
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(bastion_key)
    bastion_key.chmod(0o600)
    (tmp_path / "bastion_keys").write_bytes(key.export_public_key())
    (tmp_path / "sshd").mkdir()
    only = f"AuthorizedKeysFile {tmp_path / 'bastion_keys'}"
    server = Sshd(tmp_path / "sshd", host_options={1: (only,)})
    server.start()
    try:
        target, bastion = server.hosts[0], server.hosts[1]
        ssh_dir = isolated_home / ".ssh"
        ssh_dir.mkdir()
        (ssh_dir / "config").write_text(
            f"Host bastion-alias\n  HostName 127.0.0.1\n  Port {bastion.port}\n"
            f"  IdentityFile {bastion_key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {server.known_hosts}\n"
        )
        argv = ["-J", f"{server.user}@bastion-alias", "-i", str(server.client_key)]
        argv += ["-o", f"UserKnownHostsFile={server.known_hosts}", "-p", str(target.port)]
        real = real_ssh(f"{server.user}@127.0.0.1", *argv)
        assert real.stdout == "ok\n", real.stderr
        host = server.host_config(target, name="gpu", jump=f"{server.user}@bastion-alias")
        assert await echo(host) == b"h0\n"
    finally:
        server.close()
