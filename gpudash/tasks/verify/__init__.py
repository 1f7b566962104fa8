"""The verify task: a program shipped to the host that runs real kernels on its GPUs.

`program.py` is standalone (stdlib + torch, torch imported inside functions) because it is
copied to the host and run there with the serving venv's python; nothing in it may import
gpudash. Its JSON result is read back by `gpudash.probe.verify` and judged by
`gpudash.checks.verify`.
"""

from __future__ import annotations

from pathlib import Path

PROGRAM = Path(__file__).with_name("program.py")
"""The file the task copies to the host."""
