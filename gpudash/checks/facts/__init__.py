"""Facts tables gpudash's stack verdicts are computed from: data, each row with its source.

FACTS_DATE is the day these tables were last read from their sources; they go stale as
PyTorch, NVIDIA and the engines publish new releases (README "Stack facts" says how to
refresh them). Verdicts about anything newer than the tables say so instead of guessing.
"""

from __future__ import annotations

FACTS_DATE = "2026-12-03"
