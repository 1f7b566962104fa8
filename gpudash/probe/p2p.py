"""`nvidia-smi topo -p2p r|w|rw|n|a|p`: may each GPU pair do peer-to-peer, and if not, why.

The matrix looks like `topo -m` without the affinity columns, with a leading space on the
header and each row, a trailing tab, and status cells instead of link types (driver 580,
real captures in tests/fixtures; the legend is the tool's):

     \tGPU0\tGPU1\t
     GPU0\tX\tGNS\t
     GPU1\tGNS\tX\t

`OK` is peer access allowed; `CNS` chipset, `GNS` GPU, `TNS` topology not supported, `NS`
not supported, `DR` disabled by regkey, `U` unknown. The output does not say which
capability was asked (read, write, NVLink, atomics, PCIe): the caller knows its command.
Pure, total, linear: rows are split on whitespace, never matched by a backtracking pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from gpudash.text import clean_line, strip_escapes

STATUS = {
    "X": "self",
    "OK": "status ok",
    "CNS": "chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "topology not supported",
    "NS": "not supported",
    "DR": "disabled by regkey",
    "U": "unknown",
}
_GPU = re.compile(r"GPU\d{1,4}")
_LEGEND_P2P = re.compile(r"^\s*OK\s*=\s*Status Ok\s*$", re.M)
_MAX_GPUS = 4096  # a header longer than this is not a GPU list: bounded work


@dataclass(frozen=True)
class P2pMatrix:
    """`status[a][b]` is the cell of row `a`, column `b`, as printed (`X` on the diagonal)."""

    gpus: tuple[str, ...] = ()
    status: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def pairs(self) -> Iterator[tuple[str, str, str]]:
        """Each ordered pair once (a->b and b->a can differ), diagonal left out."""
        for a, row in self.status.items():
            for b, cell in row.items():
                if a != b:
                    yield a, b, cell

    @property
    def all_ok(self) -> bool:
        """Every pair read says OK (False with fewer than two GPUs or a pair not read)."""
        n = len(self.gpus)
        cells = list(self.pairs())
        return n >= 2 and len(cells) == n * (n - 1) and all(c == "OK" for *_, c in cells)

    def to_json(self) -> dict[str, object]:
        blocked = [f"{a}->{b} {c}" for a, b, c in self.pairs() if c != "OK"]
        return {
            "gpus": list(self.gpus),
            "status": {a: dict(row) for a, row in self.status.items()},
            "all_ok": self.all_ok,
            "blocked": blocked,
            "notes": list(self.notes),
        }


def looks_like_p2p(text: str) -> bool:
    """A `topo -p2p` output: its legend has `OK = Status Ok` (`topo -m`'s has not)."""
    return isinstance(text, str) and bool(_LEGEND_P2P.search(text[:200_000]))


def parse_p2p(text: str) -> P2pMatrix:
    """Read a `topo -p2p` matrix; never raises, notes what it could not read."""
    if not isinstance(text, str):
        return P2pMatrix(notes=("no text",))
    lines = strip_escapes(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    header: list[str] = []
    start = 0
    for i, line in enumerate(lines):
        words = line.split()
        if words and all(_GPU.fullmatch(w) for w in words) and words[0] == "GPU0":
            header = words[:_MAX_GPUS]
            start = i + 1
            break
    if not header:
        return P2pMatrix(notes=("no P2P matrix header (GPU0 ...) found",))
    known = set(header)
    status: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    for line in lines[start:]:
        words = line.split()
        if not words:
            continue
        if words[0].startswith("Legend"):
            break
        label = words[0]
        if label not in known or label in status:
            continue
        cells = words[1 : len(header) + 1]
        odd = [c for c in cells if c not in STATUS]
        if odd:
            notes.append(f"{label}: unknown status {clean_line(odd[0])[:20]!r}")
        if len(cells) < len(header):
            notes.append(f"{label}: read {len(cells)} of {len(header)} cells")
        status[label] = {g: clean_line(c)[:20] for g, c in zip(header, cells, strict=False)}
    missing = [g for g in header if g not in status]
    if missing and status:
        notes.append(f"no row for {', '.join(missing[:8])}")
    return P2pMatrix(tuple(header), status, tuple(notes))
