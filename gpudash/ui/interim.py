"""Findings while a probe round is still running: from the sections already in.

The core computes a host's findings once its round ends (`Fleet`, FindingsComputed), so one
hung section (an `nvidia-smi topo -m` that never returns) held back every finding for its
whole timeout. The Findings panel shows these meanwhile: the same checks over the sections
that have arrived, with no peers (tag comparisons wait for the round) and without the "not
probed" notes of sections still running. The round's own findings replace them.
"""

from __future__ import annotations

from typing import Any

from gpudash.model import HostResult


def interim_findings(result: HostResult, config: Any) -> tuple[Any, ...]:
    """`run_checks` over what has arrived; never raises (a check's error is its finding)."""
    from gpudash.checks import run_checks

    host = next((h for h in getattr(config, "hosts", ()) if h.name == result.name), None)
    found = run_checks(result, host, (), getattr(config, "tasks", None))
    return tuple(
        f
        for f in found
        if not (f.code == "probe.section_missing" and f.facts.get("error") == "not probed")
    )
