"""Probing a NetRig the two ways a user does, and the checks every fault test makes.

`probe_cli` runs `gpudash probe --json` as a subprocess (what a user types); `probe_fleet`
drives the Fleet API in-process (what the app does). Each fault test then checks the same
four things: the affected host has one clear line, every other host is fully probed, nothing
crashed, and it all finished within a bound.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudash.config.load import load_config
from gpudash.fleet import Fleet
from gpudash.model import HostResult
from gpudash.probe.registry import SECTION_NAMES
from tests.support.netrig import NetRig
from tests.support.peakrss import gpudash_argv, peak_kib

SECTIONS = set(SECTION_NAMES)
"""Every registered section: what a fully probed host carries."""


@dataclass
class CliRun:
    hosts: dict[str, dict[str, Any]]
    elapsed: float
    returncode: int
    stderr: str
    max_rss_kib: int


def probe_cli(
    rig: NetRig,
    config_text: str,
    *names: str,
    client_netns: bool = False,
    timeout: float = 30,
    workdir: Path,
) -> CliRun:
    """`gpudash probe --json` on `config_text`; with client_netns, from the rig's client
    namespace (no resolver there but its own loopback)."""
    config = workdir / f"gpudash-{time.monotonic_ns()}.toml"
    config.write_text(config_text)
    rss_file = config.with_suffix(".rss")
    argv = gpudash_argv(rss_file, "probe", "--json", "--config", str(config), *names)
    if client_netns:
        argv = rig.client_command(argv)
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        cwd=workdir,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"gpudash probe hung: still running after {timeout:g}s") from None
    elapsed = time.monotonic() - start
    rss = peak_kib(rss_file)
    assert proc.returncode in (0, 1), f"exit {proc.returncode}: {err[-2000:]}"
    assert "Traceback" not in err, err
    hosts = {h["name"]: h for h in json.loads(out)["hosts"]}
    return CliRun(hosts, elapsed, proc.returncode, err, rss)


async def probe_fleet(config_path: Path, rounds: int = 1, timeout: float = 30) -> list[dict]:
    """Probe every host `rounds` times on one Fleet (connections reused between rounds);
    each round's results as {name: HostResult}."""
    out = []
    async with asyncio.timeout(timeout), Fleet(load_config(str(config_path))) as fleet:
        for _ in range(rounds):
            async for _event in fleet.probe():
                pass
            out.append(dict(fleet.results))
    return out


def as_json(result: HostResult | dict[str, Any]) -> dict[str, Any]:
    return result.to_json() if isinstance(result, HostResult) else result


def assert_fully_probed(host: HostResult | dict[str, Any]) -> None:
    """Ready, every section present with its data and no error."""
    h = as_json(host)
    assert (h["state"], h["error"]) == ("ready", None), h["error"]
    assert set(h["sections"]) == SECTIONS
    errors = {k: v["error"] for k, v in h["sections"].items() if v["error"]}
    assert errors == {}, errors
    assert all(v["data"] is not None for v in h["sections"].values())


def assert_reason(host: HostResult | dict[str, Any], *needles: str) -> str:
    """The host failed with one line, prefixed with its name, containing every needle."""
    h = as_json(host)
    reason = h["error"] or ""
    assert h["state"] == "failed", h
    assert reason.startswith(f"{h['name']}: "), reason
    assert "\n" not in reason and "Traceback" not in reason, reason
    for needle in needles:
        assert needle in reason, reason
    assert set(h["sections"]) <= SECTIONS
    return reason


def others_fully_probed(hosts: dict[str, Any], *affected: str) -> None:
    for name, host in hosts.items():
        if name not in affected:
            assert_fully_probed(host)
