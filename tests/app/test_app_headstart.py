"""The first probe round begins before the app exists (`gpudash.headstart`), over the real
test sshd: the app takes the round over instead of probing twice, loses none of the events
that arrived before it was built, and quitting early stops the round on the host."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from gpudash.config.model import Config, HostConfig
from gpudash.fleet import Fleet
from gpudash.headstart import HeadStart, head_start_hosts
from gpudash.model import HostState
from gpudash.probe.registry import SECTION_NAMES
from gpudash.ui import create_app
from tests.app.test_app import SIZE, settled, until
from tests.support.sshd import FakeHost, Sshd

NET = ("http://127.0.0.1:9/",)


def counting_smi(host: FakeHost, sleep: str | None = None) -> Path:
    """An `nvidia-smi` on the host that notes each call (and can hang like a wedged driver)."""
    calls = host.home / "smi-calls"
    hang = f"exec sleep {sleep}\n" if sleep else ""
    host.write_tool("nvidia-smi", f'#!/bin/sh\necho call >> "{calls}"\n{hang}exit 9\n')
    return calls


def calls(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


async def one_round_calls(sshd: Sshd, host: FakeHost, path: Path) -> int:
    fleet = Fleet(Config(None, (sshd.host_config(host, network_targets=NET),)))
    try:
        async for _ in fleet.probe():
            pass
    finally:
        await fleet.close()
    n = calls(path)
    path.unlink(missing_ok=True)
    return n


async def test_the_app_takes_over_the_round_begun_before_it_so_the_host_is_probed_once(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    path = counting_smi(fake_host)
    per_round = await one_round_calls(sshd, fake_host, path)
    assert per_round > 0
    config = Config(None, (sshd.host_config(fake_host, network_targets=NET),))
    fleet = Fleet(config)
    head_start = HeadStart(fleet, [fake_host.name])
    app = create_app(config, fleet=fleet, head_start=head_start)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        result = app.results[fake_host.name]
        assert result.state is HostState.READY
        assert len(result.sections) == len(SECTION_NAMES)
    assert calls(path) == per_round


async def test_events_that_arrived_before_the_app_existed_all_reach_its_panels(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    config = Config(None, (sshd.host_config(fake_host, network_targets=NET),))
    fleet = Fleet(config)
    head_start = HeadStart(fleet, [fake_host.name])
    deadline = time.monotonic() + 30
    while fake_host.name not in fleet.results or fleet.results[fake_host.name].elapsed_s is None:
        assert time.monotonic() < deadline, "the early round never finished"
        await asyncio.sleep(0.02)
    app = create_app(config, fleet=fleet, head_start=head_start)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        shown = app.results[fake_host.name]
        assert shown.state is HostState.READY
        assert set(shown.sections) == set(fleet.results[fake_host.name].sections)


async def test_quitting_before_the_app_took_the_round_stops_it_on_the_host(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    marker = "4343.25"
    path = counting_smi(fake_host, sleep=marker)
    fleet = Fleet(Config(None, (sshd.host_config(fake_host, network_targets=NET),)))
    head_start = HeadStart(fleet, [fake_host.name])
    deadline = time.monotonic() + 30
    while calls(path) == 0 or not sleeping(marker):  # it notes the call, then hangs
        assert time.monotonic() < deadline, "the probe never reached nvidia-smi"
        await asyncio.sleep(0.02)
    await head_start.close()
    await fleet.close()
    deadline = time.monotonic() + 10
    while sleeping(marker):
        assert time.monotonic() < deadline, f"left running on the host: {sleeping(marker)}"
        await asyncio.sleep(0.05)


def sleeping(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"sleep {marker}" in line]


def test_the_local_host_starts_early_only_where_cpus_are_to_spare(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    local = HostConfig(name="here", transport="local", address="localhost")
    remote = sshd.host_config(fake_host)
    config = Config(None, (local, remote))
    assert head_start_hosts(config, cpus=2) == [remote.name]
    assert head_start_hosts(config, cpus=16) == ["here", remote.name]
    assert set(head_start_hosts(config)) >= {remote.name}


def children() -> list[str]:
    """This process's child commands (the local transport runs its script as one)."""
    pid = os.getpid()
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline")
            found.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return found


async def test_the_screen_waits_until_the_local_script_runs_and_never_longer_than_its_bound(
    sshd: Sshd, fake_host: FakeHost, silent_port: int
) -> None:
    local = HostConfig(name="here", transport="local", address="localhost", network_targets=NET)
    silent = HostConfig(name="silent", address="127.0.0.1", port=silent_port, connect_timeout=30)
    fleet = Fleet(Config(None, (local, silent)))
    head_start = HeadStart(fleet, ["here", "silent"])
    try:
        assert not any("/bin/sh" in c or "sh -s" in c for c in children())
        started = time.monotonic()
        await head_start.local_started(timeout=10)
        assert time.monotonic() - started < 10  # the silent remote host was not waited for
        # The spawn is the pump's next step: done by now, bar a loaded machine's scheduling
        # (a CI run once found it a step behind), so allow it a moment, not the bound.
        deadline = time.monotonic() + 1.0
        while not any("/bin/sh -s" in c for c in children()):
            assert time.monotonic() < deadline, children()
            await asyncio.sleep(0.01)
    finally:
        await head_start.close()
        await fleet.close()


async def test_leaving_the_local_round_early_stops_every_process_of_its_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = "4343.77"
    tools = tmp_path / "bin"
    tools.mkdir()
    smi = tools / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nexec sleep {marker}\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("GPUDASH_NVML", "0")  # the script's own nvidia-smi, here the sleeper
    local = HostConfig(name="here", transport="local", address="localhost", network_targets=NET)
    fleet = Fleet(Config(None, (local,)))
    head_start = HeadStart(fleet, ["here"])
    deadline = time.monotonic() + 30
    while not sleeping(marker):
        assert time.monotonic() < deadline, "the script never reached nvidia-smi"
        await asyncio.sleep(0.02)
    await head_start.close()
    await fleet.close()
    deadline = time.monotonic() + 10  # the transport's kill grace is 2 s; the script's 60
    while sleeping(marker):
        assert time.monotonic() < deadline, f"left running: {sleeping(marker)}"
        await asyncio.sleep(0.05)
