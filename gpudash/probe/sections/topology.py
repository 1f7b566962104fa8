"""The topology section: which GPU pairs talk over NVLink, and what the PCIe tree looks like.

`nvidia-smi topo -m` is the one source that says NV18 for every pair on NVSwitch boxes (NVML's
per-link remote ids point at switches, not peers), so the pair summary comes from it; the
per-link state and speed come from `nvidia-smi nvlink -s`, and the fabric state (NVSwitch /
NVL systems) from `nvidia-smi -q`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudash.probe.markdown import md, md_table
from gpudash.probe.parts import Part
from gpudash.text import clean_line

if TYPE_CHECKING:
    from gpudash.probe.nvlink import NvlinkStatus
    from gpudash.probe.topo import Topology as TopoMatrix

# Parsers load with the first parse, not with the section: the probe script needs only
# BODY, so the host starts before they load (host_probe.warm_parsers; issue 33 item 10).

NAME = "topology"
TIMEOUT = 20.0
"""The documented `section_timeout` default (HostConfig, gpudash/config/model.py): the limit a
user reads is the one that applies (15 s here once cut a hung `topo -m` short of it)."""

BODY = """
gd_topo() { need nvidia-smi || return; nvidia-smi topo -m; }
gd_nvlink() { need nvidia-smi || return; nvidia-smi nvlink -s; }
gd_fabric() {
  need nvidia-smi || return
  nvidia-smi -q | grep -A 4 '^ *Fabric$' || true
}
part topo gd_topo
part nvlink gd_nvlink
part fabric gd_fabric
"""

# Order from best to worst, as the topo -m legend ranks them.
PCIE_CLASSES = ("PIX", "PXB", "PHB", "NODE", "SYS")

GPU_TOOLS = {
    "topo": "nvidia-smi topo -m",
    "nvlink": "nvidia-smi nvlink -s",
    "fabric": "nvidia-smi -q",
}
"""The GPU tool each part runs (BODY): what a part that never ended is named by."""


@dataclass(frozen=True)
class Topology:
    missing: str | None
    matrix: TopoMatrix | None
    nvlink: NvlinkStatus | None
    summary: str
    gpu_pairs: int
    nvlink_pairs: int
    min_nvlink: int | None
    max_nvlink: int | None
    worst_pcie: str | None  # the worst PCIe class among non-NVLink GPU pairs
    inactive_links: int
    fabric_states: tuple[str, ...]  # per GPU, as `nvidia-smi -q` prints ("Completed", ...)
    notes: tuple[str, ...] = ()

    @property
    def all_nvlink(self) -> bool:
        return self.gpu_pairs > 0 and self.nvlink_pairs == self.gpu_pairs

    @property
    def brief(self) -> str:
        """`summary` in a table cell's room: 'NV18 · all 28', 'PCIe · SYS',
        'NV4 on 4/28 · SYS', '1 GPU' (the fleet view)."""
        if self.missing:
            return self.summary
        if not self.gpu_pairs:
            return "1 GPU" if self.matrix and len(self.matrix.gpus) == 1 else "no GPUs"
        worst = self.worst_pcie or "?"
        if not self.nvlink_pairs:
            return f"PCIe · {worst}"
        links = _links(self.min_nvlink, self.max_nvlink)
        if self.all_nvlink:
            return f"{links} · all {self.gpu_pairs}"
        return f"{links} on {self.nvlink_pairs}/{self.gpu_pairs} · {worst}"


_STATE = re.compile(r"\s*State\s*:")


def parse(parts: Mapping[str, Part]) -> Topology:
    from gpudash.probe.nvlink import parse_nvlink
    from gpudash.probe.topo import parse_topo

    topo_part = parts.get("topo")
    text = topo_part.text if topo_part else ""
    if text.strip().endswith("nvidia-smi: not found"):
        return Topology(
            "nvidia-smi: not found", None, None, "no nvidia-smi", 0, 0, None, None, None, 0, ()
        )
    matrix = parse_topo(text) if text.strip() else None
    if topo_part is not None and topo_part.rc is None and (matrix is None or not matrix.gpus):
        # Begun and never ended (the section's timeout killed it): a hung nvidia-smi, which
        # says nothing about how many GPUs there are (never "no GPUs in the topology").
        hung = "nvidia-smi topo -m did not finish"
        return Topology(hung, None, None, hung, 0, 0, None, None, None, 0, ())
    nvlink_text = parts["nvlink"].text if "nvlink" in parts else ""
    nvlink = parse_nvlink(nvlink_text) if nvlink_text.strip() else None
    counts: list[int] = []
    pcie: list[str] = []
    pairs = 0
    for _a, _b, token in matrix.pairs() if matrix else ():
        pairs += 1
        if m := re.fullmatch(r"NV(\d+)", token):
            counts.append(int(m.group(1)))
        elif token in PCIE_CLASSES:
            pcie.append(token)
    worst = max(pcie, key=PCIE_CLASSES.index) if pcie else None
    inactive = sum(
        1 for g in (nvlink.gpus if nvlink else ()) for link in g.links if not link.active
    )
    return Topology(
        missing=None,
        matrix=matrix,
        nvlink=nvlink,
        summary=_summary(pairs, counts, worst, len(matrix.gpus) if matrix else 0),
        gpu_pairs=pairs,
        nvlink_pairs=len(counts),
        min_nvlink=min(counts) if counts else None,
        max_nvlink=max(counts) if counts else None,
        worst_pcie=worst,
        inactive_links=inactive,
        fabric_states=_fabric_states(parts["fabric"].text if "fabric" in parts else ""),
        notes=tuple(matrix.notes) if matrix else ("no topology matrix printed",),
    )


def _summary(pairs: int, counts: list[int], worst: str | None, gpus: int) -> str:
    if gpus == 0:
        return "no GPUs in the topology"
    if pairs == 0:
        return "single GPU: no GPU pairs"
    if len(counts) == pairs:
        return f"all {pairs} pairs {_links(min(counts), max(counts))}"
    where = {
        "SYS": "SYS between sockets",
        "NODE": "NODE within a socket",
        "PHB": "PHB via the host bridge",
    }.get(worst or "", worst or "?")
    if not counts:
        return f"PCIe only: {where}"
    return f"NVLink on {len(counts)} of {pairs} pairs; others {where}"


def _links(low: int | None, high: int | None) -> str:
    return f"NV{low}" if low == high else f"NV{low}..NV{high}"


def _fabric_states(text: str) -> tuple[str, ...]:
    # line by line, heads only: `^\s*State\s*:\s*(.+?)\s*$` was quadratic in a run of spaces
    states = [
        rest.strip()
        for line in text.split("\n")
        if (m := _STATE.match(line)) and (rest := line[m.end() :]).strip()
    ]
    return tuple(clean_line(s) for s in states)


def summary(data: Topology) -> str:
    """The one line `gpudash probe` prints for this section."""
    if data.missing:
        return data.missing
    line = data.summary
    if data.inactive_links:
        line += f" · {data.inactive_links} NVLink links inactive"
    return line


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "Topology"


def report(t: Topology) -> list[str]:
    if t.missing:
        return [md(t.missing)]
    lines = [f"{md(t.summary)}."]
    m = t.matrix
    if m is not None and m.gpus:
        lines.append("")
        extra = [c for c in ("CPU Affinity", "NUMA Affinity") if _has(m, c)]
        rows = []
        for a in m.gpus:
            row = [a, *("X" if a == b else (m.link(a, b) or "?") for b in m.gpus)]
            if "CPU Affinity" in extra:
                row.append(m.cpu_affinity.get(a, ""))
            if "NUMA Affinity" in extra:
                row.append(m.numa_affinity.get(a, ""))
            rows.append(row)
        lines += md_table(["", *(md(g) for g in m.gpus), *extra], rows)
        if m.nics:
            nearest = [(a, ", ".join(m.nearest_nics(a)) or "?") for a in m.gpus]
            lines += ["", "Nearest NICs:", ""]
            named = {k: v for k, v in m.nic_names.items()}
            lines += md_table(["GPU", "NIC"], [(a, _nic(n, named)) for a, n in nearest])
    if t.inactive_links:
        lines += ["", f"Inactive NVLinks: {t.inactive_links}."]
    states = [s for s in t.fabric_states if s != "N/A"]
    if states:
        lines += ["", f"Fabric state: {md(', '.join(t.fabric_states))}."]
    return lines


def _nic(names: str, legend: dict[str, str]) -> str:
    return ", ".join(f"{n} ({legend[n]})" if n in legend else n for n in names.split(", "))


def _has(m: TopoMatrix, column: str) -> bool:
    return bool(m.cpu_affinity if column == "CPU Affinity" else m.numa_affinity)
