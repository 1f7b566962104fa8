"""The Env panel."""

from __future__ import annotations

from gpudash.ui.panels.base import Panel


class EnvPanel(Panel):
    SECTION = "env"
    TITLE = "Env"
