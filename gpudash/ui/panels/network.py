"""The Network panel."""

from __future__ import annotations

from gpudash.ui.panels.base import Panel


class NetworkPanel(Panel):
    SECTION = "network"
    TITLE = "Network"
