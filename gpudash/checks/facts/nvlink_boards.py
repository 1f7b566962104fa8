"""How the GPUs of each known board are wired with NVLink: all pairs, or a fixed partial mesh.

Why: NVSwitch boards (HGX/DGX A100, H100, H200, B200, GB200 trays, DGX-2 V100 SXM3) and the
4-GPU HGX boards put every GPU pair on NVLink (`topo -m` NV# everywhere), so a pair on PCIe is
a fault. The SXM2 boards of the Volta era do not: each GPU has six NVLink 2.0 bricks and the
board decides where they go, so some pairs are on PCIe/SMP by design and "all pairs" is the
wrong test. On those, completeness is judged per GPU: how many peers it has NVLink to, and
how many links in all (the sum of its NV# cells).

Sources, row by row:
  dgx1-v100  NVIDIA, "NVIDIA DGX-1 With Tesla V100 System Architecture" (WP-08437-002_v01,
             2017): eight V100 SXM2 in a hybrid cube-mesh, each GPU's six links going to four
             peers (two of them doubled). The pattern as `topo -m` prints it (NV1 NV1 NV2 NV2
             and three SYS per row) is the real capture
             tests/fixtures/public/topo-v100-8x-dgx1-hybrid-cube-mesh-spaces.txt.
  ac922-4    IBM Redpaper REDP-5472-00, "IBM Power System AC922 Introduction and Technical
             Overview" (March 2018), model 8335-GTG: four V100 SXM2, two per POWER9 socket;
             each GPU's six bricks split three to its CPU and three to the other GPU of its
             socket, so each GPU has one NVLink peer (NV3) and the other socket's GPUs are
             reached over the CPUs' SMP bus (SYS).
  ac922-6    The same Redpaper, model 8335-GTW: six V100 SXM2, three per socket; each GPU has
             two bricks to its CPU and two to each of the other two GPUs of its socket
             (NV2 to two peers, SYS across sockets).
Real captures of the 4-GPU AC922 agree with the Redpaper row: host ac922-02
(github.com/milanpro/Masterthesis-Heterogeneous-PC@5cf4beb6 README.md) and a node of
Princeton's Traverse cluster (github.com/jdh4/della-gpu-A100@c708d127 README.md) print
GPU0-GPU1 and GPU2-GPU3 NV3, every cross-socket pair SYS, NUMA affinity 0 / 8
(tests/fixtures/public/topo-v100-4x-*ac922*.txt). No public capture of the 6-GPU 8335-GTW
was found; its test matrix is written from the Redpaper and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Board:
    key: str
    description: str
    gpu: re.Pattern[str]  # matches the GPU name the driver prints
    gpus: int
    peers: int  # GPUs each GPU has NVLink to
    links: int  # NVLinks per GPU to other GPUs (the sum of its NV# cells)
    source: str


_V100_SXM2 = re.compile(r"V100\S*[-_ ]SXM2", re.I)

PARTIAL_BOARDS: tuple[Board, ...] = (
    Board(
        "dgx1-v100",
        "DGX-1 hybrid cube-mesh (8x V100 SXM2)",
        _V100_SXM2,
        8,
        4,
        6,
        "NVIDIA WP-08437-002_v01; real topo -m capture",
    ),
    Board(
        "ac922-4",
        "IBM AC922 8335-GTG (4x V100 SXM2, NVLink pairs per POWER9 socket)",
        _V100_SXM2,
        4,
        1,
        3,
        "IBM REDP-5472-00",
    ),
    Board(
        "ac922-6",
        "IBM AC922 8335-GTW (6x V100 SXM2, NVLink triples per POWER9 socket)",
        _V100_SXM2,
        6,
        2,
        4,
        "IBM REDP-5472-00",
    ),
)

SXM2_ERA = re.compile(r"[PV]100\S*[-_ ]SXM2", re.I)
"""Pascal/Volta SXM2 parts: never assumed all-pairs; judged by PARTIAL_BOARDS or not at all."""


def boards_for(name: str, count: int) -> tuple[Board, ...]:
    """The known partial-mesh boards a host of `count` GPUs named `name` can be."""
    return tuple(b for b in PARTIAL_BOARDS if b.gpus == count and b.gpu.search(name or ""))
