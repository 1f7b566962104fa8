"""SshTransport and SshPool against the real test sshd (tests/support/sshd.py): no mocks.

Host-key policies are in test_ssh_hostkeys.py."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import socket
import subprocess
import time
from pathlib import Path

import asyncssh
import pytest

from gpudash.transport.base import TransportError
from gpudash.transport.reasons import Endpoint, describe
from gpudash.transport.ssh import SshPool, SshTransport
from tests.support.sshd import FakeHost, Sshd, run_script


async def test_a_script_runs_on_the_host_and_its_output_comes_back(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    fake_host.write_tool("gpu-tool", "#!/bin/sh\necho fake tool on $GPUDASH_TEST_HOST\n")
    t = ssh_pool.transport(sshd.host_config(fake_host))
    out, status = await run_script(t, 'echo "home=$HOME"\ngpu-tool\n')
    assert status == 0
    assert out == f"home={fake_host.home}\nfake tool on h0\n".encode()


@pytest.mark.parametrize("code", [0, 1, 3, 127])
async def test_the_exit_status_is_the_scripts(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, code: int
):
    _, status = await run_script(ssh_pool.transport(sshd.host_config(fake_host)), f"exit {code}\n")
    assert status == code


async def test_stderr_is_merged_into_the_output(sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool):
    out, _ = await run_script(
        ssh_pool.transport(sshd.host_config(fake_host)), "echo out; echo err >&2; echo out2\n"
    )
    assert out.splitlines() == [b"out", b"err", b"out2"]


async def test_invalid_utf8_comes_back_as_bytes_and_the_connection_survives(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    t = ssh_pool.transport(sshd.host_config(fake_host))
    out, status = await run_script(t, "printf '\\377\\376'\n")
    assert (out, status) == (b"\xff\xfe", 0)
    link = t._link
    out, status = await run_script(t, "echo still here\n")
    assert (out, status) == (b"still here\n", 0)
    assert t._link is link  # same connection, not a reconnect


async def test_twenty_concurrent_starts_share_one_connection_eight_at_a_time(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    t = ssh_pool.transport(sshd.host_config(fake_host))
    since = sshd.log_offset()
    script = "date +%s.%N; sleep 0.3; echo {i}; date +%s.%N\n"
    results = await asyncio.gather(*(run_script(t, script.format(i=i)) for i in range(20)))
    spans = []
    for i, (out, status) in enumerate(results):
        start, mark, end = out.split()
        assert (status, mark) == (0, str(i).encode())
        spans.append((float(start), float(end)))
    peak = max(sum(1 for s, e in spans if s <= at < e) for at, _ in spans)
    assert 1 < peak <= 8
    assert sshd.connections_to(fake_host.port, since=since) == 1


async def test_the_remote_timeout_kills_the_command_and_leaves_nothing_running(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    t = ssh_pool.transport(sshd.host_config(fake_host))
    began = time.monotonic()
    out, status = await run_script(t, "echo $$\nsleep 100\n", timeout=1)
    assert status == 124
    assert time.monotonic() - began < 5
    shell = out.split()[0].decode()
    left = subprocess.run(
        ["ps", "-o", "pid=,args=", "-p", shell, "--ppid", shell], capture_output=True, text=True
    )
    assert left.stdout.strip() == ""


async def test_a_refused_port_says_connection_refused(sshd: Sshd, ssh_pool: SshPool):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = ssh_pool.transport(sshd.host_config(sshd.hosts[0], name="gone", port=port))
    with pytest.raises(TransportError) as err:
        await t.connect()
    assert err.value.reason == f"gone: connection refused by 127.0.0.1:{port}"


async def test_a_host_that_never_speaks_times_out_after_connect_timeout(
    sshd: Sshd, ssh_pool: SshPool
):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # the kernel accepts; nobody ever sends a banner
        port = listener.getsockname()[1]
        t = ssh_pool.transport(
            sshd.host_config(sshd.hosts[0], name="mute", port=port, connect_timeout=1.0)
        )
        began = time.monotonic()
        with pytest.raises(TransportError) as err:
            await t.connect()
        assert time.monotonic() - began < 2.5
    assert err.value.reason == (
        f"mute: connect timed out after 1s (127.0.0.1:{port}): "
        "TCP connected but no SSH greeting (not an SSH server, or its sshd is stuck)"
    )


async def test_a_key_the_host_does_not_authorize_fails_auth_with_advice(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
):
    stranger = tmp_path / "id_ed25519"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(stranger)
    t = ssh_pool.transport(sshd.host_config(fake_host, identity_files=(str(stranger),)))
    with pytest.raises(TransportError) as err:
        await t.connect()
    assert err.value.reason == (
        f"h0: auth failed as {sshd.user}@127.0.0.1:{fake_host.port}: load the key into "
        "ssh-agent (ssh-add) or set identity_file"
    )


async def test_two_targets_behind_one_bastion_share_one_bastion_connection(
    sshd: Sshd, fake_hosts: list[FakeHost]
):
    bastion_host, a, b = fake_hosts[1], fake_hosts[2], fake_hosts[3]
    bastion = sshd.host_config(bastion_host, name="bastion")
    targets = [sshd.host_config(h, jump="bastion") for h in (a, b)]
    pool = SshPool([bastion, *targets])
    since = sshd.log_offset()
    try:
        outs = await asyncio.gather(
            *(run_script(pool.transport(h), "echo $GPUDASH_TEST_HOST\n") for h in targets)
        )
        assert [o for o, _ in outs] == [b"h2\n", b"h3\n"]
        assert pool.bastion(targets[0]) is pool.bastion(targets[1]) is pool.transport(bastion)
        assert sshd.connections_to(bastion_host.port, since=since) == 1
        assert sshd.connections_to(a.port, since=since) == 1
    finally:
        await pool.close()
    assert not pool.transport(bastion).connected


async def test_a_jump_given_as_user_at_host_port_works(
    sshd: Sshd, fake_hosts: list[FakeHost], ssh_pool: SshPool
):
    target = sshd.host_config(fake_hosts[2], jump=f"{sshd.user}@127.0.0.1:{fake_hosts[1].port}")
    out, _ = await run_script(ssh_pool.transport(target), "echo $GPUDASH_TEST_HOST\n")
    assert out == b"h2\n"


async def test_a_failing_jump_host_is_named_in_the_reason(sshd: Sshd, ssh_pool: SshPool):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = sshd.host_config(sshd.hosts[2], jump=f"127.0.0.1:{port}")
    with pytest.raises(TransportError) as err:
        await ssh_pool.transport(target).connect()
    assert (
        err.value.reason == f"h2: via jump 127.0.0.1:{port}: connection refused by 127.0.0.1:{port}"
    )


async def test_a_connection_lost_mid_command_ends_it_and_the_next_start_reconnects(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    t = ssh_pool.transport(sshd.host_config(fake_host))
    process = await t.start("echo started\nsleep 30\n", timeout=5)
    chunks = process.chunks()
    assert await chunks.__anext__() == b"started\n"
    assert sshd.kill_connections() >= 1
    rest = [c async for c in chunks]
    assert rest == []
    assert await process.wait() is None
    await process.close()
    out, status = await run_script(t, "echo back\n")
    assert (out, status) == (b"back\n", 0)


async def test_an_idle_connection_lost_to_a_restart_is_reopened_by_the_next_start(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    t = ssh_pool.transport(sshd.host_config(fake_host))
    await run_script(t, "true\n")
    sshd.restart()
    out, _ = await run_script(t, "echo after restart\n")
    assert out == b"after restart\n"


async def test_the_pool_bounds_handshakes_and_still_connects_every_host(
    sshd: Sshd, fake_hosts: list[FakeHost]
):
    pool = SshPool([sshd.host_config(h) for h in fake_hosts], max_handshakes=2)
    try:
        outs = await asyncio.gather(
            *(
                run_script(pool.transport(h), "echo $GPUDASH_TEST_HOST\n")
                for h in pool.hosts.values()
            )
        )
        assert sorted(o for o, _ in outs) == [f"h{i}\n".encode() for i in range(8)]
    finally:
        await pool.close()


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (
            socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            "DNS name gpu9.example does not resolve (Name or service not known)",
        ),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "no route to host gpu9.example:22"),
        (OSError(errno.ENETUNREACH, "Network is unreachable"), "no route to host gpu9.example:22"),
        (
            ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
            "connection refused by gpu9.example:22",
        ),
        (asyncssh.ConnectionLost("Connection lost"), "connection lost (Connection lost)"),
        (TimeoutError(), "connect timed out after 2.5s (gpu9.example:22)"),
    ],
)
def test_each_failure_reads_as_one_line(exc: BaseException, reason: str):
    assert describe(exc, Endpoint("root", "gpu9.example", 22), connect_timeout=2.5) == reason


async def test_an_ssh_config_alias_supplies_address_port_user_key_and_known_hosts(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    ssh_dir = isolated_home / ".ssh"
    ssh_dir.mkdir()
    (ssh_dir / "config").write_text(
        f"Host gpu-alias\n  HostName 127.0.0.1\n  Port {fake_host.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n  UserKnownHostsFile {sshd.known_hosts}\n"
    )
    host = sshd.host_config(
        fake_host, name="gpu", address="gpu-alias", port=None, user=None, identity_files=()
    )
    host = dataclasses.replace(host, known_hosts=None)
    async with SshTransport(host) as t:
        assert (await run_script(t, "echo $GPUDASH_TEST_HOST\n"))[0] == b"h0\n"


async def test_a_jump_loop_is_reported_not_followed(sshd: Sshd):
    a = sshd.host_config(sshd.hosts[1], name="a", jump="b")
    b = sshd.host_config(sshd.hosts[2], name="b", jump="a")
    pool = SshPool([a, b])
    try:
        with pytest.raises(TransportError) as err:
            await pool.transport(a).connect()
        assert err.value.reason == "a: via jump b: via jump a: jump loop through a"
    finally:
        await pool.close()
