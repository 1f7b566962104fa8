"""Host-key policies (strict, accept-new, insecure) against the real test sshd: no mocks."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import asyncssh
import pytest

from gpudash.transport.base import TransportError
from gpudash.transport.ssh import SshPool, SshTransport
from tests.support.sshd import FakeHost, Sshd, run_script


def other_key_line(hostport: str) -> str:
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    return f"{hostport} {key}\n"


async def test_a_changed_host_key_is_refused_with_the_new_fingerprint(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    known = tmp_path / "known_hosts"
    known.write_text(other_key_line(f"[127.0.0.1]:{fake_host.port}"))
    t = ssh_pool.transport(sshd.host_config(fake_host, known_hosts=str(known)))
    with pytest.raises(TransportError) as err:
        await t.connect()
    reason = err.value.reason
    assert reason.startswith(f"h0: host key CHANGED for [127.0.0.1]:{fake_host.port}")
    assert sshd.host_key_fingerprint in reason
    assert "possible man-in-the-middle" in reason
    assert "\n" not in reason


async def test_an_unknown_host_is_refused_under_strict_with_how_to_accept(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    known = tmp_path / "known_hosts"
    t = ssh_pool.transport(sshd.host_config(fake_host, known_hosts=str(known)))
    with pytest.raises(TransportError) as err:
        await t.connect()
    reason = err.value.reason
    assert reason.startswith(f"h0: host key unknown for [127.0.0.1]:{fake_host.port}")
    assert sshd.host_key_fingerprint in reason
    assert 'host_key_policy = "accept-new"' in reason
    assert f"ssh-keyscan -p {fake_host.port} 127.0.0.1" in reason
    assert not known.exists()


async def test_the_default_known_hosts_file_is_home_ssh_known_hosts(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, isolated_home: Path
):
    t = ssh_pool.transport(sshd.host_config(fake_host, known_hosts=None))
    with pytest.raises(TransportError, match="host key unknown"):
        await t.connect()
    (isolated_home / ".ssh").mkdir()
    (isolated_home / ".ssh" / "known_hosts").write_text(sshd.known_hosts.read_text())
    out, _ = await run_script(t, "echo ok\n")
    assert out == b"ok\n"


async def test_accept_new_records_the_key_then_strict_trusts_it(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    known = tmp_path / "fresh" / "known_hosts"
    t = ssh_pool.transport(
        sshd.host_config(fake_host, known_hosts=str(known), host_key_policy="accept-new")
    )
    assert (await run_script(t, "echo first\n"))[0] == b"first\n"
    assert known.read_text() == f"[127.0.0.1]:{fake_host.port} {sshd.host_public_key}\n"
    assert stat.S_IMODE(known.stat().st_mode) == 0o600
    assert stat.S_IMODE(known.parent.stat().st_mode) == 0o700
    await t.close()
    again = SshTransport(sshd.host_config(fake_host, known_hosts=str(known)))
    async with again:
        assert (await run_script(again, "echo again\n"))[0] == b"again\n"
    assert known.read_text().count("\n") == 1


async def test_accept_new_still_refuses_a_changed_key(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    known = tmp_path / "known_hosts"
    known.write_text(other_key_line(f"[127.0.0.1]:{fake_host.port}"))
    before = known.read_text()
    t = ssh_pool.transport(
        sshd.host_config(fake_host, known_hosts=str(known), host_key_policy="accept-new")
    )
    with pytest.raises(TransportError, match="host key CHANGED"):
        await t.connect()
    assert known.read_text() == before


async def test_insecure_connects_without_known_hosts_and_warns_once(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    known = tmp_path / "known_hosts"
    known.write_text(other_key_line(f"[127.0.0.1]:{fake_host.port}"))
    t = ssh_pool.transport(
        sshd.host_config(fake_host, known_hosts=str(known), host_key_policy="insecure")
    )
    assert (await run_script(t, "echo in\n"))[0] == b"in\n"
    sshd.kill_connections()
    await asyncio.sleep(0.2)
    assert (await run_script(t, "echo again\n"))[0] == b"again\n"
    assert t.warnings == ['h0: host key not verified (host_key_policy = "insecure")']


async def test_accept_new_without_a_known_hosts_setting_records_into_home_ssh(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    host = sshd.host_config(fake_host, known_hosts=None, host_key_policy="accept-new")
    async with SshTransport(host) as t:
        assert (await run_script(t, "echo ok\n"))[0] == b"ok\n"
    known = isolated_home / ".ssh" / "known_hosts"
    assert known.read_text() == f"[127.0.0.1]:{fake_host.port} {sshd.host_public_key}\n"
    assert stat.S_IMODE(known.parent.stat().st_mode) == 0o700
