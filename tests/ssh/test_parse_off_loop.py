"""A slow parse costs only its own host (issue 20, item 2): parsing runs in a worker thread,
so a host whose output takes seconds to parse neither delays a healthy host's result nor its
own probe deadline. Both hosts run the real probe script through the local transport."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from gpudash.config.model import HostConfig
from gpudash.host_probe import probe_host
from gpudash.model import HostStateChanged, SectionDone
from gpudash.probe.parts import Part
from gpudash.probe.registry import Section
from gpudash.transport.local import LocalTransport

SLOW_S = 8.0


def _slow_parse(parts: Mapping[str, Part]) -> Any:
    """Stands in for a parser fed pathological text: seconds of CPU, in Python."""
    end = time.monotonic() + SLOW_S
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


async def _arrivals(host: HostConfig, section: Section[Any], start: float) -> dict[str, float]:
    seen: dict[str, float] = {}
    async for event in probe_host(host, LocalTransport(use_nvml=False), [section]):
        if isinstance(event, SectionDone):
            seen[event.result.name] = time.monotonic() - start
        elif isinstance(event, HostStateChanged) and event.state.value in ("ready", "failed"):
            seen["end"] = time.monotonic() - start
    return seen


def _none(_data: Any) -> list[str]:
    return []


async def test_a_slow_parse_delays_neither_a_healthy_host_nor_its_own_deadline() -> None:
    hostile = Section("hostile", 10.0, "part a printf x", _slow_parse, str, "Hostile", _none, {})
    healthy = Section(
        "healthy", 10.0, "sleep 0.3; part a printf ok", lambda p: p, str, "Healthy", _none, {}
    )
    slow_host = HostConfig(name="slow", transport="local", probe_timeout=1.0)
    fine_host = HostConfig(name="fine", transport="local", probe_timeout=10.0)
    ticks: list[float] = []

    async def ticker() -> None:  # the event loop's own latency while both run
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.01)
            ticks.append(time.monotonic() - before - 0.01)

    tick = asyncio.ensure_future(ticker())
    start = time.monotonic()
    slow, fine = await asyncio.gather(
        _arrivals(slow_host, hostile, start), _arrivals(fine_host, healthy, start)
    )
    tick.cancel()
    assert fine["healthy"] < 1.5, fine  # not after the hostile parse
    assert slow["end"] < 7.0, slow  # its deadline (1 s + the 5 s grace) held, not 8 s
    assert max(ticks) < 0.1, f"the event loop stalled {max(ticks):.3f}s"
