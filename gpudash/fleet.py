"""Many hosts at once: one transport per host, bounded concurrency, one merged event stream.

A `Fleet` owns the connections for its lifetime, so a re-probe reuses them. Hosts run in their
own tasks; a slow or hung host only ever delays itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING

from gpudash.aio import merge
from gpudash.config.model import Config, HostConfig
from gpudash.host_probe import probe_host
from gpudash.model import (
    Event,
    FindingsComputed,
    HostResult,
    HostState,
    HostStateChanged,
    ProbeFinished,
    apply,
)
from gpudash.transport.base import Transport

if TYPE_CHECKING:
    from gpudash.checks.finding import Finding
    from gpudash.checks.groups import Groups
    from gpudash.transport.ssh import SshPool


class Fleet:
    def __init__(self, config: Config, *, findings: bool = True) -> None:
        """`findings=False` for a consumer that shows none (`gpudash probe`): no checks run,
        so the round ends when the last host's output is parsed."""
        self.config = config
        self._findings = findings
        self._transports: dict[str, Transport] = {}
        self._ssh_pool: SshPool | None = None
        self._slots = asyncio.Semaphore(max(1, config.concurrency))
        self.results: dict[str, HostResult] = {}
        """The latest snapshot of every host probed so far: what comparisons need."""
        self._groups: Groups | None = None  # tag-group majorities, built on first findings
        self._by_name: dict[str, HostConfig] = {}
        self._round: list[HostConfig] = []  # the hosts of the round being started

    def transport(self, host: HostConfig) -> Transport:
        if host.name not in self._transports:
            self._transports[host.name] = self._make(host)
        return self._transports[host.name]

    def _make(self, host: HostConfig) -> Transport:
        if host.transport == "local":
            from gpudash.transport.local import LocalTransport

            # GPUDASH_NVML=0 forces the nvidia-smi path, e.g. to compare it with NVML.
            return LocalTransport(use_nvml=os.environ.get("GPUDASH_NVML", "1") != "0")
        if host.transport == "replay":
            from gpudash.transport.replay import ReplayTransport

            return ReplayTransport(host.replay_dir or "")
        if self._ssh_pool is None:
            from gpudash.transport.early import open_early

            # Before the import below: these connects complete while asyncssh loads.
            limit = min(self.config.concurrency, self.config.max_handshakes)
            early = open_early(self._round or [host], limit)
            from gpudash.transport.ssh import SshPool

            self._ssh_pool = SshPool(
                self.config, max_handshakes=self.config.max_handshakes, early=early
            )
        return self._ssh_pool.transport(host)

    def hosts(self, names: Iterable[str] | None = None) -> list[HostConfig]:
        if names is None:
            return list(self.config.hosts)
        wanted = set(names)
        return [h for h in self.config.hosts if h.name in wanted]

    async def probe(
        self, names: Iterable[str] | None = None, sections: Iterable[str] | None = None
    ) -> AsyncIterator[Event]:
        """Probe the named (default: all) hosts concurrently; events arrive as they happen.

        `sections` limits the round to those probe sections (after a task: the ones it
        changed); the others keep their last results."""
        plan = None
        if sections is not None:
            from gpudash.probe.registry import section

            plan = [section(name) for name in sections]

        async def one(host: HostConfig) -> AsyncIterator[Event]:
            start = time.monotonic()
            try:
                async with self._slots:
                    async for event in probe_host(host, self.transport(host), plan):
                        yield event
            except Exception as exc:  # a bug here must cost one host, never the fleet
                reason = f"internal error: {type(exc).__name__}: {exc}"
                yield HostStateChanged(host.name, HostState.FAILED, reason)
                yield ProbeFinished(host.name, time.monotonic() - start)

        self._round = self.hosts(names)
        async for event in merge(one(h) for h in self._round):
            self._record(event)
            yield event
            if isinstance(event, ProbeFinished) and self._findings:
                for found in self._findings_after(event.host):
                    self._record(found)
                    yield found

    def _record(self, event: Event) -> None:
        snapshot = self.results.get(event.host) or HostResult(event.host)
        self.results[event.host] = apply(snapshot, event)

    def _findings_after(self, name: str) -> list[FindingsComputed]:
        """Findings of the host that just finished, and of the peers (hosts sharing a tag)
        whose comparison its new result changed.

        The tag groups' majorities are kept in one `Groups`, moved by this host's result
        alone; only the peers it names are checked again, and a peer's findings are sent
        only when they differ. (Re-checking every peer, each walking every peer, cost
        O(N²) per host round and O(N³) per fleet round.)

        Guarded per host like the probe itself: checks that raise cost their own verdicts
        (one `check.error` finding each), never this host's other findings, another host's,
        or the round."""
        from gpudash.checks.finding import check_error, sort_findings
        from gpudash.checks.groups import Groups

        if self._groups is None:
            self._groups = Groups()
            self._by_name = {h.name: h for h in self.config.hosts}
        host = self._by_name.get(name)
        if host is None:
            return []
        broken: tuple[Finding, ...] = ()
        try:
            peers = self._groups.update(name, host.tags, self.results.get(name))
        except Exception as exc:  # its comparisons are unknown; its own checks still run
            peers, broken = set(), (check_error("compare", exc),)
        out = []
        for host_name in [name, *sorted(peers)]:
            config, result = self._by_name.get(host_name), self.results.get(host_name)
            if config is None or result is None:
                continue
            found = self._checks(config, result)
            if host_name == name and broken:
                found = sort_findings((*found, *broken))
            if host_name == name or found != result.findings:
                out.append(FindingsComputed(host_name, found))
        return out

    def _checks(self, host: HostConfig, result: HostResult) -> tuple[Finding, ...]:
        """One host's findings; `run_checks` guards each check family itself, and this
        guards whatever runs around them (the task-key lookup, the sort)."""
        from gpudash.checks import run_checks
        from gpudash.checks.finding import check_error

        try:
            return run_checks(result, host, (), self.config.tasks, self._groups)
        except Exception as exc:
            return (check_error("checks", exc),)

    async def close(self) -> None:
        for transport in self._transports.values():
            with contextlib.suppress(Exception):
                await transport.close()
        if self._ssh_pool is not None:
            with contextlib.suppress(Exception):
                await self._ssh_pool.close()
        self._transports.clear()

    async def __aenter__(self) -> Fleet:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
