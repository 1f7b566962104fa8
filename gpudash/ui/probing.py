"""The app's probe workers and the routing of their events to the widgets (a mixin of
GpudashApp, like TaskActions), so app.py stays the composition and the keys.

Each host has one probe worker (group `probe:<host>`, exclusive), which iterates the core's
`Fleet.probe([host])` and posts every event as a `ProbeEvent`. The handler folds it into the
host's frozen `HostResult` with the core's one reducer and hands the new snapshot to the
widgets that show that host. With a refresh interval the worker sleeps and probes again, so
a host's rounds never overlap and a slow host only ever delays itself.

When every host has settled, the snapshots are long-lived: `HeapSettler` moves them out of
the collector's reach (`gc.freeze`), so a full collection no longer walks 1000 hosts' data
while the user presses keys (a 200-500 ms pause every few keys with 1000 hosts).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterable
from typing import Any

from textual.css.query import NoMatches

from gpudash.model import HostResult, HostState, HostStateChanged, ProbeFinished, apply
from gpudash.ui.messages import ProbeEvent
from gpudash.ui.widgets.fleet_rows import FleetRows

_ROUND_START = (HostState.CONNECTING, HostState.PROBING)


SETTLE_S = 0.1
"""How long every host must have been quiet before the heap is frozen (and again while a
probe worker is still finishing: a worker that outlived the freeze would stay frozen)."""


class HeapSettler:
    """Freezes the heap once the hosts have settled, so full collections skip their data.

    A settle collects the young generations (20-30 ms with 1000 hosts) and freezes the rest.
    Frozen objects are still freed by reference counting when a newer round replaces them
    (snapshots are trees of frozen dataclasses and tuples); what a freeze keeps by mistake
    is cycles that were already garbage in the oldest generation, or alive at the freeze and
    dead later (render caches of the screen at that moment). So once the frozen heap has
    grown by a quarter since its last full collection (CPython's own rule for the oldest
    generation), a settle unfreezes and collects everything: what leaks is bounded, and the
    one full pause comes every few rounds at a settle, not every few keys."""

    GROWTH = 1.25
    STARTUP_S = 2.0
    """The longest the collector stays off after start-up (see `paused`)."""

    def __init__(self, paused: bool = False) -> None:
        self.base = 0  # frozen objects right after the last full collection (0: none yet)
        self.frozen = 0  # frozen objects right after the last settle
        self.pauses: list[tuple[str, float, int]] = []
        """Per settle: "start", "young" or "full", its seconds, the objects frozen after it."""
        self.paused = paused
        """`run_app` turned the collector off for start-up: importing Textual and building
        the screen make ~100 young and ~10 older collections, a full one among them (~0.1 s
        of a 2-CPU machine's first second). Nearly all of it lives as long as the app, so the
        first settle (or STARTUP_S, for a host that never answers) freezes it unexamined and
        turns the collector back on; the few cycles that start-up left are never freed."""

    def end_pause(self) -> None:
        if self.paused:
            self.paused = False
            gc.freeze()
            gc.enable()
            self.base = self.frozen = gc.get_freeze_count()

    def settle(self) -> None:
        start = time.perf_counter()
        if self.paused:
            kind = "start"
            self.paused = False
            gc.enable()
        elif self.base and self.frozen > self.base * self.GROWTH:
            kind = "full"
            gc.unfreeze()
            gc.collect()
        else:
            kind = "young"
            gc.collect(1)
        gc.freeze()
        # Counted once per settle: CPython walks the frozen list to count it (~20 ns an
        # object on a 2-CPU VM, ~9 ms for the start-up heap); the next settle reads this.
        self.frozen = gc.get_freeze_count()
        if kind != "young" or not self.base:
            self.base = self.frozen
        self.pauses.append((kind, time.perf_counter() - start, self.frozen))

    def release(self) -> None:
        """Give the collector everything back (the app is closing; its process may not)."""
        if self.paused:
            self.paused = False
            gc.enable()
        if self.base:
            gc.unfreeze()


class ProbeRouting:
    """Mixed into GpudashApp, which provides `fleet`, `results`, `selected`, `refresh_s`,
    `_head_start`, `_busy`, `_partial`, `_reprobe_next`, `_quitting`, `tasks`, `host_list`,
    `host_view`, `screen_stack`, `run_worker`, `post_message` and `call_later`."""

    fleet: Any
    results: dict[str, HostResult]
    selected: str | None
    refresh_s: float
    _head_start: Any
    _busy: set[str]
    _partial: set[str]
    _reprobe_next: dict[str, tuple[str, ...] | None]
    _quitting: bool
    _settle_timer: Any = None
    _unshown: set[str]
    heap: HeapSettler

    def probe(self, names: Iterable[str], sections: tuple[str, ...] | None = None) -> list[str]:
        """Start a probe round (of only `sections`, when given) for each named host that
        is not probing already."""
        started = []
        for name in names:
            if name in self._busy or self._quitting:
                continue
            self._busy.add(name)  # before the worker runs, so a second `r` is a no-op
            self.run_worker(  # type: ignore[attr-defined]
                self._probe_loop(name) if sections is None else self._probe_once(name, sections),
                name=f"probe {name}",
                group=f"probe:{name}",
                description=f"Probing {name}",
                exclusive=True,
                exit_on_error=False,
            )
            started.append(name)
        return started

    async def _probe_loop(self, name: str) -> None:
        while True:
            self._busy.add(name)
            begun = self._head_start.take(name) if self._head_start else None
            try:
                async for event in begun or self.fleet.probe([name]):
                    self.post_message(ProbeEvent(event))  # type: ignore[attr-defined]
            finally:
                self._busy.discard(name)
                # after the paint: its remote job lookup and heap settle must not delay the
                # panels (at start-up the head start's round ends before the first frame)
                self.call_after_refresh(self._after_round, name)  # type: ignore[attr-defined]
            if self.refresh_s <= 0:
                return
            await asyncio.sleep(self.refresh_s)

    async def _probe_once(self, name: str, sections: tuple[str, ...]) -> None:
        """Only `sections` (what a task changed); the host stays ready meanwhile."""
        self._partial.add(name)
        try:
            async for event in self.fleet.probe([name], sections):
                self.post_message(ProbeEvent(event))  # type: ignore[attr-defined]
        finally:
            self._busy.discard(name)
            self.call_after_refresh(self._after_round, name)  # type: ignore[attr-defined]

    def reprobe(self, host: str, sections: tuple[str, ...] | None) -> None:
        """After a task: probe what it changed now, or right after the round in progress."""
        if host in self._busy:
            pending = self._reprobe_next.get(host, ())
            merged = None if sections is None or pending is None else (*pending, *sections)
            self._reprobe_next[host] = None if merged is None else tuple(dict.fromkeys(merged))
            return
        self.probe([host], sections)

    def on_probe_event(self, message: ProbeEvent) -> None:
        """By name, not `@on`: Textual collects `@on` handlers only from a widget class's
        own body, and this is a mixin."""
        event = message.event
        if event.host not in self.results or self._quitting or not self.screen_stack:  # type: ignore[attr-defined]
            return
        if event.host in self._partial:
            if isinstance(event, HostStateChanged) and event.state in _ROUND_START:
                return  # a partial round: the row keeps saying ready
            if isinstance(event, ProbeFinished):
                self._partial.discard(event.host)
        self.results[event.host] = apply(self.results[event.host], event)
        if not self._unshown:
            self.call_later(self._show_events)  # type: ignore[attr-defined]
        self._unshown.add(event.host)

    def _show_events(self) -> None:
        """Show each host's newest snapshot once, however many events made it.

        Events come in bursts (a head start's buffered round, sections that finish together),
        each a message of its own; this runs after the burst's last one, already queued, so a
        burst costs one update of the widgets, not one per event."""
        hosts, self._unshown = self._unshown, set()
        if self._quitting or not self.screen_stack:  # type: ignore[attr-defined]
            return
        try:
            host_list = self.host_list  # type: ignore[attr-defined]
        except NoMatches:  # the app is closing (a re-probe after a task ended late)
            return
        fleets = self._fleet_screens()
        rows = FleetRows.of(self)  # the fleet view opens on values made here
        for host in hosts:
            snapshot = self.results[host]
            rows.update(snapshot)
            host_list.update_host(snapshot)
            if host == self.selected:
                self.host_view.show(snapshot)  # type: ignore[attr-defined]
            for screen in fleets:
                screen.update_host(snapshot)

    def _fleet_screens(self) -> list[Any]:
        stack = self.screen_stack  # type: ignore[attr-defined]
        if len(stack) < 2:
            return []  # the host screen alone (and the fleet module maybe not imported yet)
        from gpudash.ui.screens.fleet import FleetScreen

        return [s for s in stack if isinstance(s, FleetScreen)]

    def _after_round(self, host: str) -> None:
        if self._quitting or host in self._busy:
            return
        if host in self._reprobe_next:
            self.probe([host], self._reprobe_next.pop(host))
        elif self.results[host].state is HostState.READY:
            self.tasks.find_jobs(host)  # type: ignore[attr-defined]
        if not self._busy:
            if self._settle_timer is not None:
                self._settle_timer.stop()
            self._settle_timer = self.set_timer(SETTLE_S, self._settle)  # type: ignore[attr-defined]

    def _settle(self) -> None:
        self._settle_timer = None
        running = any(
            (w.group or "").startswith("probe:") and not w.is_finished
            for w in self.workers  # type: ignore[attr-defined]
        )
        if self._busy or self._quitting:
            return
        if running:
            self._settle_timer = self.set_timer(SETTLE_S, self._settle)  # type: ignore[attr-defined]
        else:
            self.heap.settle()
