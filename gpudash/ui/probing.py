"""The app's probe workers and the routing of their events into the app's snapshots: an
object the app composes (`GpudashApp.probing`), seeing the app only through `ProbeHost`.

Each host has one probe worker (group `probe:<host>`, exclusive), which iterates the core's
`Fleet.probe([host])` and posts every event as a `ProbeEvent`. The router folds it into the
host's frozen `HostResult` with the core's one reducer and has the app show the new snapshot
in the widgets that show that host. With a refresh interval the worker sleeps and probes again, so
a host's rounds never overlap and a slow host only ever delays itself.

When every host has settled, the snapshots are long-lived: `HeapSettler` moves them out of
the collector's reach (`gc.freeze`), so a full collection no longer walks 1000 hosts' data
while the user presses keys (a 200-500 ms pause every few keys with 1000 hosts).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from gpudash.model import Event, HostResult, HostState, HostStateChanged, ProbeFinished, apply
from gpudash.ui.messages import ProbeEvent

if TYPE_CHECKING:
    from textual.message import Message
    from textual.timer import Timer
    from textual.worker import Worker
    from textual.worker_manager import WorkerManager

    from gpudash.fleet import Fleet
    from gpudash.headstart import HeadStart

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


class ProbeHost(Protocol):
    """What `ProbeRouter` needs from the app, and nothing more: the core's fleet and the
    snapshots the app shows, the app's reactions to a round, and Textual's scheduling (the
    App's own methods, so the workers and timers stay the app's and end with it)."""

    @property
    def fleet(self) -> Fleet: ...
    @property
    def results(self) -> dict[str, HostResult]:
        """The host's latest snapshot, by name; the router replaces entries."""
        ...

    @property
    def refresh_s(self) -> float: ...
    @property
    def quitting(self) -> bool: ...
    @property
    def workers(self) -> WorkerManager: ...
    def run_worker(
        self,
        work: Coroutine[Any, Any, None],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
    ) -> Worker[None]: ...
    def post_message(self, message: Message) -> bool: ...
    def call_later(self, callback: Callable[..., object], *args: Any) -> bool: ...
    def call_after_refresh(self, callback: Callable[..., object], *args: Any) -> bool: ...
    def set_timer(self, delay: float, callback: Callable[[], object] | None = None) -> Timer: ...
    def show_hosts(self, hosts: set[str]) -> None:
        """Show these hosts' newest snapshots in every widget that shows them."""
        ...

    def host_ready(self, host: str) -> None:
        """The host's round ended with it ready (look for the task jobs running there)."""
        ...


class ProbeRouter:
    """The app's probe workers and the way of their events into the app's snapshots.

    Made by the app (`GpudashApp.probing`), which hands over its `HeapSettler` and the
    start-up rounds (`HeadStart`) and shows what the router folded (`ProbeHost.show_hosts`)."""

    def __init__(
        self, host: ProbeHost, heap: HeapSettler, head_start: HeadStart | None = None
    ) -> None:
        self.host = host
        self.heap = heap
        self._head_start = head_start
        self.busy: set[str] = set()
        """Hosts with a round in flight (or about to start: set before its worker runs)."""
        self._unshown: set[str] = set()  # hosts with events not yet shown
        self._partial: set[str] = set()  # hosts in a round of only some sections
        self._reprobe_next: dict[str, tuple[str, ...] | None] = {}
        self._settle_timer: Timer | None = None

    def probe(self, names: Iterable[str], sections: tuple[str, ...] | None = None) -> list[str]:
        """Start a probe round (of only `sections`, when given) for each named host that
        is not probing already."""
        started = []
        for name in names:
            if name in self.busy or self.host.quitting:
                continue
            self.busy.add(name)  # before the worker runs, so a second `r` is a no-op
            self.host.run_worker(
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
            self.busy.add(name)
            begun = self._head_start.take(name) if self._head_start else None
            try:
                async for event in begun or self.host.fleet.probe([name]):
                    self.host.post_message(ProbeEvent(event))
            finally:
                self.busy.discard(name)
                # after the paint: its remote job lookup and heap settle must not delay the
                # panels (at start-up the head start's round ends before the first frame)
                self.host.call_after_refresh(self._after_round, name)
            if self.host.refresh_s <= 0:
                return
            await asyncio.sleep(self.host.refresh_s)

    async def _probe_once(self, name: str, sections: tuple[str, ...]) -> None:
        """Only `sections` (what a task changed); the host stays ready meanwhile."""
        self._partial.add(name)
        try:
            async for event in self.host.fleet.probe([name], sections):
                self.host.post_message(ProbeEvent(event))
        finally:
            self.busy.discard(name)
            self.host.call_after_refresh(self._after_round, name)

    def reprobe(self, host: str, sections: tuple[str, ...] | None) -> None:
        """After a task: probe what it changed now, or right after the round in progress."""
        if host in self.busy:
            pending = self._reprobe_next.get(host, ())
            merged = None if sections is None or pending is None else (*pending, *sections)
            self._reprobe_next[host] = None if merged is None else tuple(dict.fromkeys(merged))
            return
        self.probe([host], sections)

    def on_event(self, event: Event) -> None:
        """Fold one event (the app's `ProbeEvent` handler hands it over) into its host's
        snapshot.

        The app folds the stream itself rather than reading `Fleet.results`: a partial
        round's start must not show (the row keeps saying ready, and the fleet's snapshot
        says probing), and each snapshot shown is the one its own event made, in order,
        whereas the fleet's may already be some events ahead of the message queue."""
        results = self.host.results
        if event.host not in results or self.host.quitting:
            return
        if event.host in self._partial:
            if isinstance(event, HostStateChanged) and event.state in _ROUND_START:
                return  # a partial round: the row keeps saying ready
            if isinstance(event, ProbeFinished):
                self._partial.discard(event.host)
        results[event.host] = apply(results[event.host], event)
        if not self._unshown:
            self.host.call_later(self._show_events)
        self._unshown.add(event.host)

    def _show_events(self) -> None:
        """Show each host's newest snapshot once, however many events made it.

        Events come in bursts (a head start's buffered round, sections that finish together),
        each a message of its own; this runs after the burst's last one, already queued, so a
        burst costs one update of the widgets, not one per event."""
        hosts, self._unshown = self._unshown, set()
        if not self.host.quitting:
            self.host.show_hosts(hosts)

    def _after_round(self, host: str) -> None:
        if self.host.quitting or host in self.busy:
            return
        if host in self._reprobe_next:
            self.probe([host], self._reprobe_next.pop(host))
        elif self.host.results[host].state is HostState.READY:
            self.host.host_ready(host)
        if not self.busy:
            if self._settle_timer is not None:
                self._settle_timer.stop()
            self._settle_timer = self.host.set_timer(SETTLE_S, self._settle)

    def _settle(self) -> None:
        self._settle_timer = None
        running = any(
            (w.group or "").startswith("probe:") and not w.is_finished for w in self.host.workers
        )
        if self.busy or self.host.quitting:
            return
        if running:
            self._settle_timer = self.host.set_timer(SETTLE_S, self._settle)
        else:
            self.heap.settle()
