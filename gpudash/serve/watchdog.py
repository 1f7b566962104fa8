"""The stall watchdog: an engine is stalled when no new log line came AND the GPUs' used
memory did not change for `stall` seconds (a silent weight load or graph capture still moves
memory; a hung NCCL init or a JIT lock does not). A fixed delay cannot tell those apart.

nvidia-smi is asked only once the log has been quiet for a while (stall/4, at most 30 s),
and then at most every stall/10 (1-30 s): a busy log costs no process at all.

Travels to the host: stdlib only, Python 3.9+.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable

QUERY = ["--query-gpu=memory.used", "--format=csv,noheader,nounits"]


def gpu_memory() -> str | None:
    """Every GPU's used memory as nvidia-smi prints it (one MiB figure a line); None without
    nvidia-smi, or when it fails (then only the log speaks)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, *QUERY], capture_output=True, timeout=10, text=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


class StallWatch:
    def __init__(
        self,
        stall: float,
        read_gpu: Callable[[], str | None] = gpu_memory,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stall, self.read_gpu, self.clock = stall, read_gpu, clock
        self.last = self.checked = clock()
        self.memory = read_gpu()

    def activity(self) -> None:
        """A log line (or any other sign of life) came now."""
        self.last = self.clock()

    def stalled(self) -> float | None:
        """Seconds without a sign of life when past `stall`, else None."""
        now = self.clock()
        quiet_enough = now - self.last > min(30.0, self.stall / 4)
        if quiet_enough and now - self.checked > max(1.0, min(30.0, self.stall / 10)):
            memory, self.checked = self.read_gpu(), now
            if memory != self.memory:
                self.memory, self.last = memory, now
        quiet = now - self.last
        return quiet if quiet > self.stall else None
