"""The Textual face of gpudash: a thin consumer of the core's event stream.

Only this package imports textual. `create_app` is the one factory the CLI and the tests
share; importing this package does not load Textual until one of the two is called.
"""

from __future__ import annotations

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
    app = create_app(config)
    rc = app.run()
    return 0 if rc is None else int(rc)
