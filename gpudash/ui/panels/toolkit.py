"""The Toolkit panel."""

from __future__ import annotations

from gpudash.ui.panels.base import Panel


class ToolkitPanel(Panel):
    SECTION = "toolkit"
    TITLE = "Toolkit"
