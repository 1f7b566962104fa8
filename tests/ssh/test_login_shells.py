"""Non-POSIX login shells (issue 20, item 1), against real sshd hosts.

OpenSSH runs the remote command as `$LOGIN_SHELL -c COMMAND`, so the login shell parses
gpudash's constant exec strings before /bin/sh ever sees them. Each host here emulates a login
shell with sshd's `ForceCommand`: sshd runs the force command through the user's own shell,
and `exec fish -c "$SSH_ORIGINAL_COMMAND"` hands fish the command exactly as a fish login
shell would get it. fish and tcsh must pass our commands on untouched (the probe answers, a
task runs, data on stdin arrives whole), with `timeout` on PATH and without it (the longer
command with the sh kill timer); restricted bash refuses any command with a `/` and must make
a failed host with its own line, never an answered one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.transport.ssh import SshPool
from tests.ssh.test_trust_probe import (
    _drain,
    _path_without_timeout,
    _survivors,
    config,
    gpudash,
)
from tests.support import FIXTURES, fakegpu
from tests.support.sshd import FakeHost, Sshd
from tests.support.tools import require

FISH, TCSH, RBASH, FISH_NO_TIMEOUT, TCSH_NO_TIMEOUT = range(5)
SHELLS = {
    "fish": FISH,
    "tcsh": TCSH,
    "fish-without-timeout": FISH_NO_TIMEOUT,
    "tcsh-without-timeout": TCSH_NO_TIMEOUT,
}


def _login(shell: str) -> tuple[str, ...]:
    return (f'ForceCommand exec {shell} -c "$SSH_ORIGINAL_COMMAND"',)


@pytest.fixture(scope="module")
def shells_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    fish, tcsh, bash = require("fish"), require("tcsh"), require("bash")
    root = tmp_path_factory.mktemp("shells-sshd")
    bare = _path_without_timeout(root / "no-timeout-bin")
    server = Sshd(
        root,
        host_options={
            FISH: _login(fish),
            TCSH: _login(tcsh),
            RBASH: _login(f"{bash} -r"),
            FISH_NO_TIMEOUT: _login(fish),
            TCSH_NO_TIMEOUT: _login(tcsh),
        },
        host_path={i: f"{root}/hosts/h{i}/bin:{bare}" for i in (FISH_NO_TIMEOUT, TCSH_NO_TIMEOUT)},
    )
    server.start()
    try:
        yield server
    finally:
        server.close()


def _host(server: Sshd, index: int) -> FakeHost:
    host = server.hosts[index]
    host.reset()
    fakegpu.install(host.bin_dir, FIXTURES / "h200-1x")
    return host


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_the_probe_survives_a_fish_or_tcsh_login_shell_and_answers(
    shells_sshd: Sshd, tmp_path: Path, shell: str
) -> None:
    host = _host(shells_sshd, SHELLS[shell])
    cfg = config(shells_sshd, host, tmp_path / "c.toml")
    run = gpudash("probe", "--json", "--config", str(cfg))
    assert run.returncode == 0, run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["hosts"]
    assert result["state"] == "ready", result
    assert result["sections"]["gpus"]["data"]["gpus"][0]["name"].startswith("NVIDIA H200")
    assert result["sections"]["system"]["data"]["hostname"]
    said = any("no `timeout` on the host's PATH" in note for note in result["notes"])
    assert said == shell.endswith("without-timeout")


def test_a_restricted_bash_login_is_a_failed_host_with_its_own_line(
    shells_sshd: Sshd, tmp_path: Path
) -> None:
    host = _host(shells_sshd, RBASH)
    cfg = config(shells_sshd, host, tmp_path / "c.toml")
    probe = gpudash("probe", "--config", str(cfg))
    assert probe.returncode == 1, probe.stdout + probe.stderr
    assert "0 of 1 hosts answered" in probe.stdout
    assert "FAILED" in probe.stdout and "restricted" in probe.stdout
    assert "Traceback" not in probe.stdout + probe.stderr

    (result,) = json.loads(gpudash("probe", "--json", "--config", str(cfg)).stdout)["hosts"]
    assert result["state"] == "failed"
    assert "the probe did not run: " in result["error"]
    assert "restricted" in result["error"]

    check = gpudash("check", "--config", str(cfg))
    assert check.returncode == 1, check.stdout + check.stderr


TASK = """
[tasks.hello]
title = "say hello"
kind = "script"
run = '''
printf 'hello from %s, 100%% {ok} !x $HOME\\n' "$GPUDASH_TEST_HOST"
'''
"""


def _run_config(server: Sshd, host: FakeHost, path: Path) -> str:
    path.write_text(server.host_toml(host) + "\n" + TASK)
    return str(path)


@pytest.mark.parametrize("shell", ["fish", "tcsh"])
def test_a_script_task_runs_under_a_fish_or_tcsh_login_shell(
    shells_sshd: Sshd, tmp_path: Path, shell: str
) -> None:
    host = _host(shells_sshd, SHELLS[shell])
    cfg = _run_config(shells_sshd, host, tmp_path / "c.toml")
    run = gpudash("run", "hello", "--yes", "--config", cfg)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert f"{host.name} | hello from {host.name}, 100% {{ok}} !x $HOME" in lines, lines
    assert any(line.startswith(f"{host.name} | == hello: ok (") for line in lines), lines


def test_a_task_on_a_restricted_bash_host_fails_cleanly_with_its_line(
    shells_sshd: Sshd, tmp_path: Path
) -> None:
    host = _host(shells_sshd, RBASH)
    cfg = _run_config(shells_sshd, host, tmp_path / "c.toml")
    run = gpudash("run", "hello", "--yes", "--config", cfg)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "restricted" in run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert "hello from" not in run.stdout


@pytest.mark.parametrize("shell", sorted(SHELLS))
async def test_data_behind_the_script_arrives_whole_under_a_fish_or_tcsh_login_shell(
    shells_sshd: Sshd, shell: str
) -> None:
    """`start_input` (a copy's receiving end) under each login shell, with the remote timeout
    (the longer command: `timeout`, or the sh kill timer where it is missing)."""
    host = _host(shells_sshd, SHELLS[shell])
    data = os.urandom(1024 * 1024 + 3)
    pool = SshPool([])
    try:
        transport = pool.transport(shells_sshd.host_config(host))
        process = await transport.start_input(
            "command -v timeout || echo no-timeout; exec sha256sum\n", timeout=30
        )
        try:
            await process.write(data)
            await process.write_eof()
            out = b"".join([chunk async for chunk in process.chunks()]).decode()
            assert await process.wait() == 0, out
        finally:
            await process.close()
    finally:
        await pool.close()
    first, digest = out.split("\n", 1)
    assert (first == "no-timeout") == shell.endswith("without-timeout"), out
    assert digest.split()[0] == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("shell", ["fish-without-timeout", "tcsh-without-timeout"])
async def test_the_kill_timer_fires_under_a_fish_or_tcsh_login_shell(
    shells_sshd: Sshd, shell: str
) -> None:
    """The sh kill timer (no `timeout` on PATH) still stops the command and all it started
    when the login shell in front of it is fish or tcsh (which may keep its own process
    group, or fork instead of exec)."""
    host = _host(shells_sshd, SHELLS[shell])
    marker = f"gd-orphan-{uuid.uuid4().hex[:12]}"
    (host.bin_dir / marker).symlink_to(shutil.which("sleep") or "/bin/sleep")
    pool = SshPool([])
    start = time.monotonic()
    try:
        transport = pool.transport(shells_sshd.host_config(host))
        process = await transport.start(f"{marker} 300 & {marker} 301\n", timeout=2)
        try:
            _, status = await asyncio.wait_for(_drain(process), 20)
        finally:
            await process.close()
    finally:
        await pool.close()
    assert status != 0
    assert time.monotonic() - start < 15
    assert _survivors(marker) == []
