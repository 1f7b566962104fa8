"""The readiness ladder run in a thread beside the supervisor's log loop: it climbs
port -> /health -> /v1/models -> a streamed chat, then measures a second request, and posts
each step to a queue that the supervisor alone turns into lines and state.

Travels to the host: stdlib only, Python 3.9+.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

try:
    from gpudash.serve import ready
except ImportError:  # on the host: the job's files/ folder is on sys.path
    import ready  # type: ignore[no-redef, import-not-found]  # travels flat

FIRST_MAX_TOKENS = 32
MEASURE_MAX_TOKENS = 256
Step = tuple[str, Any]


class Ladder(threading.Thread):
    """Posts ("port", None), ("health", status), ("models", (listed, note)),
    ("gen_failed", Generation), ("generated", Generation), ("measured", Generation).
    Polls with a backoff capped at `cap` seconds: a rung that starts answering is seen
    within `cap`, and a quiet wait costs a few wake-ups a second."""

    def __init__(self, port: int, model: str, name: str, cap: float = 1.0) -> None:
        super().__init__(name="gpudash-serve-ladder", daemon=True)
        self.port, self.model, self.name = port, model, name
        self.steps: queue.Queue[Step] = queue.Queue()
        self.stop = threading.Event()
        self.cap = cap

    def _wait(self, backoff: ready.Backoff) -> bool:
        return not self.stop.wait(backoff.next())

    def run(self) -> None:
        backoff = ready.Backoff(0.1, self.cap)
        while not ready.port_open(self.port):
            if not self._wait(backoff):
                return
        self.steps.put(("port", None))
        backoff.reset()
        last = None
        while True:
            status, _ = ready.get(self.port, "/health")
            if status != last:
                self.steps.put(("health", status))
                last = status
            if status == 200:
                break
            if not self._wait(backoff):
                return
        self.steps.put(("models", ready.models_check(self.port, self.name)))
        backoff.reset()
        while True:
            gen = ready.chat(self.port, self.model, FIRST_MAX_TOKENS)
            if gen.ok:
                self.steps.put(("generated", gen))
                break
            self.steps.put(("gen_failed", gen))
            if not self._wait(backoff):
                return
        if self.stop.is_set():
            return
        self.steps.put(("measured", ready.chat(self.port, self.model, MEASURE_MAX_TOKENS)))

    def drain(self, timeout: float) -> list[Step]:
        """The steps posted so far, waiting up to `timeout` for the first."""
        out = []
        try:
            out.append(self.steps.get(timeout=timeout) if timeout > 0 else self.steps.get_nowait())
            while True:
                out.append(self.steps.get_nowait())
        except queue.Empty:
            pass
        return out


def since(start: float) -> float:
    return round(time.monotonic() - start, 1)
