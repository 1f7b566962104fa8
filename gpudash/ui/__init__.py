"""The Textual face of gpudash: a thin consumer of the core's event stream.

Only this package imports textual. `create_app` is the one factory the CLI and the tests
share; importing this package does not load Textual until one of the two is called.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from gpudash.config.model import Config


def create_app(config: Config, **kw: Any) -> App[int]:
    """The app for `config`. Keywords go to `GpudashApp` (tests: `theme`, `save_dir`, ...)."""
    from gpudash.ui.app import GpudashApp

    return GpudashApp(config, **kw)


def run_app(config: Config) -> int:
    """Run the app in this terminal until the user quits; the process exit status.

    The cyclic collector is off from here until the first probe rounds settle
    (`HeapSettler.paused`): start-up allocates what the app keeps, and collecting it
    repeatedly cost ~0.1 s of a small machine's first second."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return asyncio.run(_run(config, gc_paused=paused))
    finally:
        if paused:
            gc.enable()


async def _run(config: Config, gc_paused: bool = False) -> int:
    """Begin the first probe rounds (`head_start_hosts`), then import Textual and build the
    screen while the hosts answer."""
    from gpudash.fleet import Fleet
    from gpudash.headstart import HeadStart, head_start_hosts

    fleet = Fleet(config)
    head_start = HeadStart(fleet, head_start_hosts(config))
    try:
        await head_start.local_started()
        await asyncio.to_thread(importlib.import_module, "gpudash.ui.app")
        app = create_app(config, fleet=fleet, head_start=head_start, gc_paused=gc_paused)
        rc = await app.run_async()
    finally:
        await head_start.close()
        await fleet.close()
    return 0 if rc is None else int(rc)
