"""The Textual face of gpudash: a thin consumer of the core's event stream.

Only this package imports textual. `create_app` is the one factory the CLI and the tests
share; importing this package does not load Textual until one of the two is called.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from gpudash.config import Config


def create_app(config: Config, **kw: Any) -> App[int]:
    """The app for `config`. Keywords go to `GpudashApp` (tests: `theme`, `save_dir`, ...)."""
    from gpudash.ui.app import GpudashApp

    return GpudashApp(config, **kw)


def run_app(config: Config) -> int:
    """Run the app in this terminal until the user quits; the process exit status."""
    return asyncio.run(_run(config))


async def _run(config: Config) -> int:
    """Begin every remote host's first probe round, then import Textual and build the screen
    while the hosts answer. The local host waits for the screen: its probe would run on the
    very CPUs that build it (measured with bench/bench_app.py: on 2 cores the first frame came
    ~300 ms later and the panels no sooner)."""
    from gpudash.fleet import Fleet
    from gpudash.headstart import HeadStart

    fleet = Fleet(config)
    head_start = HeadStart(fleet, [h.name for h in config.hosts if h.transport != "local"])
    try:
        await asyncio.to_thread(importlib.import_module, "gpudash.ui.app")
        app = create_app(config, fleet=fleet, head_start=head_start)
        rc = await app.run_async()
    finally:
        await head_start.close()
        await fleet.close()
    return 0 if rc is None else int(rc)
