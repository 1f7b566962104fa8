"""The cyclic garbage collector, paused while a `gpudash` process starts.

A start is imports and the config: tens of thousands of objects (classes, functions, the
modules' tables) made once and kept for the life of the process. The collector still
scans them every few hundred allocations, and again in full each time the heap has grown
by a quarter: ~5 % of a `gpudash probe` start's CPU (~10 ms of ~200 on the 2-vCPU development
VM, docs/performance-probe.md). Nothing made then is garbage worth collecting.

So the collector is off from the process's first line (`gpudash/__main__.py`, `entry`)
until the command's start is over (`resume`: at once for every command but `probe`; for a
one-host probe once the host is connected or failed, for more hosts at the first event,
when asyncssh is loaded, so that no handshake's garbage is frozen), and what exists then is
frozen
(`gc.freeze`: moved where no collection scans it again) before the collector runs again as
usual. A caller that did not pause it (a test calling `main`) is left as it was.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Turn the collector off, if it is on (idempotent)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze the objects of the start and turn the collector back on, if `pause` turned it
    off (idempotent: later calls do nothing)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
