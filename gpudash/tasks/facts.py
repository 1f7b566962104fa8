"""What the probe knows about a host that a task's preparation reads, and the refusal a kind
raises when it cannot be made for that host.

Its own module (below `gpudash.tasks.prepare` and every kind module) so that a kind's
`prepare` hook can read the facts without importing the pipeline that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudash.model import HostResult
    from gpudash.probe.sections.network import Network


class PrepareError(ValueError):
    """The task cannot be made for this host (e.g. cuda = "auto" with no GPU facts)."""


@dataclass(frozen=True)
class Facts:
    """What the probe said that task defaults depend on. `ccs` has one entry per GPU, None
    where the GPU's compute capability is unknown (a GPU host is never taken for a CPU one).
    `result` is the whole probe result of the sections the kinds asked for
    (`Kind.facts_sections`), for a kind that needs more than the GPUs (serve's preflight)."""

    driver_cuda: str | None = None
    ccs: tuple[str | None, ...] = ()
    known: bool = False
    driver_version: str | None = None
    gpus: int | None = None
    """How many GPUs the driver lists (verify compares CUDA's count with it)."""
    sites: tuple[tuple[str, bool, str], ...] = ()
    """The probe's network check, per named site: (host, reached, why not). Empty when it
    did not look (or named only IP literals, which say nothing about the internet)."""
    broken: tuple[int, ...] = ()
    """Positions in `ccs` of GPUs nvidia-smi shows in error (ERR!): the torch choice may
    leave them out when the others are one model (gpudash.checks.stack.choose_torch)."""
    result: HostResult | None = None

    @classmethod
    def from_result(cls, result: HostResult | None) -> Facts:
        """From a `gpudash.model.HostResult` (its `gpus` and `network` sections), or unknown."""
        from gpudash.probe.sections.gpus import Gpus
        from gpudash.probe.sections.network import Network

        network = result.data("network", Network) if result is not None else None
        sites = _sites(network) if network is not None else ()
        gpus = result.data("gpus", Gpus) if result is not None else None
        if gpus is None:
            return cls(sites=sites, result=result)
        listed = gpus.gpus
        ccs = tuple(g.cc or None for g in listed)
        return cls(
            gpus.cuda_version,
            ccs,
            known=True,
            driver_version=gpus.driver_version,
            gpus=len(ccs) if gpus.source != "none" else None,
            sites=sites,
            broken=tuple(i for i, g in enumerate(listed) if g.error),
            result=result,
        )


def _sites(network: Network) -> tuple[tuple[str, bool, str], ...]:
    out = []
    for t in network.targets:
        if not t.host or t.dns_ok is None:
            continue  # an IP literal (a test's 127.0.0.1): nothing about the internet
        why = "name resolution failed" if t.dns_ok is False else (t.error or "no answer")
        out.append((t.host, bool(t.ok), why))
    return tuple(out)
