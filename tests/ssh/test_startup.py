"""What a `gpudash` run does before its first connection: only the imports its command needs,
and the TCP connect begun before asyncssh is imported (gpudash.transport.early).

Against the real test sshd: the connections it accepted are counted in its own log.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpudash.config.load import parse_config
from gpudash.fleet import Fleet
from gpudash.model import HostState
from gpudash.transport.early import connected, open_early
from tests.conftest import SilentListener, silent_listener
from tests.support import FIXTURES
from tests.support.sshd import FakeHost, Sshd

LOOPBACK_TARGET = 'network_targets = ["http://127.0.0.1:9/"]\n'


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gpudash.toml"
    path.write_text(text)
    return path


def probe(config: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudash", "--config", str(config), "probe", "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )


def states(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [h["state"] for h in json.loads(done.stdout)["hosts"]]


# -- imports -----------------------------------------------------------------------------------


NOT_FOR_A_PROBE = (
    "gpudash.tasks",
    "gpudash.checks",
    "gpudash.cli.check",
    "gpudash.cli.report",
    "gpudash.cli.tasks",
    "gpudash.ui",
    "gpudash.saved",  # --save / --replay only
    "gpudash.config.expect",  # a config with `expect` only
    "difflib",  # a config mistake's "did you mean" only
    "importlib.abc",  # gpudash.transport.nox509 needs no ABC
)
"""Modules a plain `gpudash probe --json` must not load: each is start-up time before the first
connection, paid by every run (docs/performance-probe.md)."""


def test_a_probe_imports_no_task_or_check_module(sshd: Sshd, fake_host: FakeHost, tmp_path):
    config = write_config(tmp_path, sshd.host_toml(fake_host, "h0") + LOOPBACK_TARGET)
    code = (
        "import sys, contextlib, gc, io\n"
        "from gpudash.cli import startup\n"
        "startup.pause()\n"  # as `python -m gpudash` and the console script do
        "from gpudash.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main(['--config', {str(config)!r}, 'probe', '--json'])\n"
        f"loaded = sorted(m for m in sys.modules if m.startswith({NOT_FOR_A_PROBE!r}))\n"
        "print(code, out.getvalue().count('\"ready\"'), gc.isenabled(), ' '.join(loaded))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    exit_code, ready, collecting, *loaded = done.stdout.split()
    assert (exit_code, ready) == ("0", "1")
    assert collecting == "True"  # the collector paused for the start only
    assert loaded == []


def test_the_collector_is_paused_for_the_start_only(tmp_path):
    """Paused from the first line, resumed once a command's start is over (at once for all
    but a probe), whatever the command did; a caller that never paused it is left alone."""
    code = (
        "import gc\n"
        "from gpudash.cli import startup\n"
        "startup.pause(); paused = not gc.isenabled()\n"
        "from gpudash.cli.main import main\n"
        "main(['--config', '/nonexistent/c.toml', 'probe'])\n"  # a usage error
        "after_error = gc.isenabled()\n"
        "gc.disable(); startup.resume(); left_alone = not gc.isenabled()\n"
        "print(paused, after_error, left_alone)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True"]


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["probe"], set()),
        ([], set()),
        (["--config", "run", "check", "h0"], {"gpudash.cli.check"}),
        (["run", "uv", "h0"], {"gpudash.cli.tasks"}),
        (["report", "h0"], {"gpudash.cli.report"}),
        (["--help"], {"gpudash.cli.tasks", "gpudash.cli.check", "gpudash.cli.report"}),
        (["chek"], {"gpudash.cli.tasks", "gpudash.cli.check", "gpudash.cli.report"}),
    ],
)
def test_the_command_line_imports_only_the_module_of_its_command(argv, wanted):
    code = (
        "import sys\nfrom gpudash.cli.main import build_parser\n"
        f"build_parser({argv!r})\n"
        "modules = ('gpudash.cli.tasks', 'gpudash.cli.check', 'gpudash.cli.report')\n"
        "print(' '.join(m for m in modules if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) == wanted


def test_help_still_lists_every_command():
    done = subprocess.run(
        [sys.executable, "-m", "gpudash", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    for command in ("probe", "parse", "tasks", "run", "check", "report"):
        assert f"    {command}" in done.stdout


def test_a_config_without_tasks_still_has_every_builtin_task(tmp_path):
    from gpudash.config.load import load_config
    from gpudash.tasks.spec import load_tasks

    config = load_config(str(write_config(tmp_path, '[hosts.a]\naddress = "10.0.0.1"\n')))
    assert dict(config.tasks) == dict(load_tasks())
    assert "uv" in config.tasks


# -- the early connection ----------------------------------------------------------------------


def test_one_probe_run_makes_one_connection_to_the_host(sshd: Sshd, fake_host: FakeHost, tmp_path):
    config = write_config(tmp_path, sshd.host_toml(fake_host, "h0") + LOOPBACK_TARGET)
    since = sshd.log_offset()
    assert states(probe(config)) == ["ready"]
    assert sshd.connections_to(fake_host.port, since=since) == 1


async def test_the_ssh_session_runs_on_the_socket_connected_early(
    sshd: Sshd, fake_host: FakeHost, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO, logger="asyncssh")
    text = sshd.host_toml(fake_host, "h0") + LOOPBACK_TARGET
    async with Fleet(parse_config(text, "test.toml")) as fleet:
        events = [event async for event in fleet.probe()]
    assert HostState.READY in [getattr(e, "state", None) for e in events]
    assert "already-connected socket" in caplog.text  # asyncssh was handed the early socket


@pytest.fixture
def recorder_beside(fake_host: FakeHost) -> Iterator[SilentListener]:
    """A listener on 127.0.0.2 at the fake host's port that accepts and never answers."""
    with silent_listener("127.0.0.2", fake_host.port) as listener:
        yield listener


def test_an_address_that_ssh_config_sends_elsewhere_connects_where_ssh_config_says(
    sshd: Sshd, fake_host: FakeHost, recorder_beside: SilentListener, isolated_home: Path, tmp_path
):
    # gpudash's early connect can only go to the address in gpudash's config (127.0.0.2,
    # a listener that never answers); ~/.ssh/config sends the host to the real sshd.
    ssh_dir = isolated_home / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "config").write_text("Host 127.0.0.2\n  HostName 127.0.0.1\n")
    block = sshd.host_toml(fake_host, "h0").replace('"127.0.0.1"', '"127.0.0.2"')
    config = write_config(tmp_path, block + LOOPBACK_TARGET + "connect_timeout = 5\n")
    since = sshd.log_offset()
    assert states(probe(config)) == ["ready"]
    assert len(recorder_beside.accepted) == 1  # the early connect, closed unused
    assert sshd.connections_to(fake_host.port, since=since) == 1


@dataclass
class Host:
    name: str
    address: str
    port: int | None = None
    transport: str = "ssh"
    jump: str | None = None


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server
    server.close()


def test_only_ip_literals_without_a_jump_are_connected_early_up_to_the_limit(listener):
    port = listener.getsockname()[1]
    hosts = [
        Host("named", "localhost", port),
        Host("jumped", "127.0.0.1", port, jump="bastion"),
        Host("local", "127.0.0.1", transport="local"),
        Host("a", "127.0.0.1", port),
        Host("b", "127.0.0.1", port),
        Host("c", "127.0.0.1", port),
    ]
    early = open_early(hosts, limit=2)
    try:
        assert sorted(early) == ["a", "b"]
        assert connected(early.pop("a"), "127.0.0.1", port) is not None
    finally:
        for sock in early.values():
            sock.close()


def test_a_socket_to_another_port_or_a_refused_one_is_closed_not_used(listener):
    port = listener.getsockname()[1]
    (sock,) = open_early([Host("a", "127.0.0.1", port)], limit=1).values()
    assert connected(sock, "127.0.0.1", port + 1) is None
    assert sock.fileno() == -1

    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))
    closed_port = refused.getsockname()[1]
    refused.close()
    early = open_early([Host("a", "127.0.0.1", closed_port)], limit=1)
    for sock in early.values():  # refused at once, or pending and refused by now
        assert connected(sock, "127.0.0.1", closed_port) is None


def test_the_section_modules_load_while_the_first_connect_is_still_waiting():
    # A fresh interpreter: nothing of the probe's sections imported yet. The transport's
    # connect waits (as a handshake waits on the network) and watches for them to load.
    saved = FIXTURES / "saved" / "dgx-h200"
    code = f"""
import asyncio
from gpudash.config.model import HostConfig
from gpudash.model import HostState
from gpudash.probe import registry
from gpudash.host_probe import probe_host
from gpudash.transport.replay import ReplayTransport

class WaitingConnect(ReplayTransport):
    async def connect(self):
        if registry.sections_loaded():
            return await super().connect()  # the second call, from probe()
        print("connect began before the sections loaded")
        for _ in range(1000):
            if registry.sections_loaded():
                print("loaded during connect")
                break
            await asyncio.sleep(0.01)
        await super().connect()

async def main():
    host = HostConfig(name="h", transport="replay", address="h", replay_dir={str(saved)!r})
    events = [e async for e in probe_host(host, WaitingConnect(host.replay_dir))]
    print(events[-2].state.value)

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "connect began before the sections loaded",
        "loaded during connect",
        "ready",
    ]


@pytest.mark.parametrize("json_out", [False, True])
def test_a_reader_that_left_ends_the_run_quietly(json_out: bool):
    # `gpudash probe | head`: every write after the reader left fails with EPIPE.
    saved = FIXTURES / "saved"
    read_end, write_end = os.pipe()
    os.close(read_end)
    args = [sys.executable, "-m", "gpudash", "probe", "--replay", str(saved)]
    done = subprocess.run(
        args + (["--json"] if json_out else []),
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141
