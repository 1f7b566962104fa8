"""The Models panel."""

from __future__ import annotations

from gpudash.ui.panels.base import Panel


class ModelsPanel(Panel):
    SECTION = "models"
    TITLE = "Models"
