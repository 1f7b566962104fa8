"""The core knows nothing of the screen: no module outside gpudash.ui imports Textual or Rich.

Checked in a fresh interpreter per module, so an import hidden behind another import counts.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import gpudash


def core_modules() -> list[str]:
    names = [
        m.name
        for m in pkgutil.walk_packages(gpudash.__path__, "gpudash.")
        if not m.name.startswith("gpudash.ui")
    ]
    assert "gpudash.host_probe" in names and "gpudash.fleet" in names
    return names


def test_no_core_module_imports_textual_or_rich():
    code = (
        "import importlib, sys\n"
        f"for name in {core_modules()!r}:\n"
        "    if name == 'gpudash.__main__':\n"
        "        continue\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(' '.join(bad))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == ""
