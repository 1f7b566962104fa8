"""`nvidia-smi topo -m`: which GPU pairs talk over NVLink, and which NIC sits next to which GPU.

The matrix is meant for eyes, not machines, and it reaches us in many shapes: tab separated with
an ANSI-underlined header and a doubled tab before `N/A` (straight from the tool), space
aligned (a Markdown paste), indented, with CRLF endings, or with cells glued together where a
16-NIC header outgrew the tool's column width (`SYSSYS`, `NIC11NIC12`, `NIC11CPU Affinity`).
So the parser reads labels and link tokens by pattern rather than by column position: a row
is its label followed by one known link token per GPU/NIC column, then the affinity columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from gpudash.text import clean_line, strip_escapes

TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
# Header pieces: the named trailing columns, GPU/NIC labels, raw device names (mlx5_0, ...).
_HEADER_TOKEN = re.compile(
    r"GPU NUMA ID|CPU Affinity|NUMA Affinity|GPU\d+|NIC\d+|mlx\d+_\d+(?=mlx|\s|$)|\S+"
)
# Link tokens, longest first where one is a prefix of another.
_LINK = re.compile(r"\s*(X|NV\d+|NODE|N/A|PIX|PXB|PHB|SYS|SOC|CNS|GNS|TNS|NS|OK)(?![a-z0-9_])")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_NV = re.compile(r"NV(\d+)")


@dataclass(frozen=True)
class Topology:
    """The matrix as read. `links[row][column]` is the token as printed (`X` on the diagonal)."""

    gpus: tuple[str, ...] = ()
    nics: tuple[str, ...] = ()
    nic_names: dict[str, str] = field(default_factory=dict)
    links: dict[str, dict[str, str]] = field(default_factory=dict)
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)
    gpu_numa_id: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def link(self, a: str, b: str) -> str | None:
        """The token between two devices, read from either row (a pasted matrix may lack one)."""
        return self.links.get(a, {}).get(b) or self.links.get(b, {}).get(a)

    def pairs(self) -> Iterator[tuple[str, str, str]]:
        """Each unordered GPU pair once, with its token; pairs no row describes are skipped.

        Walks the cells that were read, not every GPU pair: a 9000-column header with no
        rows is 9000 names, not 40 million pairs (issue 20)."""
        index = {g: i for i, g in enumerate(self.gpus)}
        found: set[tuple[int, int]] = set()
        for a, cols in self.links.items():
            ia = index.get(a)
            if ia is None:
                continue
            for b in cols:
                ib = index.get(b)
                if ib is not None and ib != ia:
                    found.add((min(ia, ib), max(ia, ib)))
        for i, j in sorted(found):
            a, b = self.gpus[i], self.gpus[j]
            token = self.link(a, b)
            if token is not None:
                yield a, b, token

    def nvlink_counts(self) -> tuple[int, ...]:
        return tuple(int(m.group(1)) for _, _, t in self.pairs() if (m := _NV.fullmatch(t)))

    @property
    def all_nvlink(self) -> bool:
        """Every GPU pair is NV#. False with fewer than two GPUs (no pair to bond) and when a
        truncated paste leaves some pair undescribed (it cannot be vouched for)."""
        n = len(self.gpus)
        pairs = list(self.pairs())
        complete = len(pairs) == n * (n - 1) // 2
        return n >= 2 and complete and all(_NV.fullmatch(t) for *_, t in pairs)

    @property
    def min_nvlink(self) -> int | None:
        counts = self.nvlink_counts()
        return min(counts) if counts else None

    @property
    def max_nvlink(self) -> int | None:
        counts = self.nvlink_counts()
        return max(counts) if counts else None

    def nearest_nics(self, gpu: str) -> tuple[str, ...]:
        """NICs with the closest PCIe class to `gpu` (PIX before PXB before PHB ...)."""
        order = ("PIX", "PXB", "PHB", "NODE", "SYS")
        ranked = [(order.index(t), n) for n in self.nics if (t := self.link(gpu, n)) in order]
        if not ranked:
            return ()
        best = min(r for r, _ in ranked)
        return tuple(n for r, n in ranked if r == best)

    def to_json(self) -> dict[str, object]:
        return {
            "gpus": list(self.gpus),
            "nics": list(self.nics),
            "nic_names": dict(self.nic_names),
            "links": {row: dict(cols) for row, cols in self.links.items()},
            "cpu_affinity": dict(self.cpu_affinity),
            "numa_affinity": dict(self.numa_affinity),
            "gpu_numa_id": dict(self.gpu_numa_id),
            "all_nvlink": self.all_nvlink,
            "min_nvlink": self.min_nvlink,
        }


def parse_topo(text: str) -> Topology:
    """Read a `topo -m` matrix; never raises, notes what it could not read."""
    if not isinstance(text, str):
        return Topology(notes=("no text",))
    lines = strip_escapes(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    notes: list[str] = []
    start = next((i for i, line in enumerate(lines) if _is_header(line)), None)
    if start is None:
        return Topology(notes=("no topology header (GPU0 ...) found",))
    columns, trailing = _header(lines[start])
    known = set(columns)
    gpus = tuple(c for c in columns if c.startswith("GPU"))
    nics = tuple(c for c in columns if not c.startswith("GPU"))
    links: dict[str, dict[str, str]] = {}
    cpu: dict[str, str] = {}
    numa: dict[str, str] = {}
    gpu_numa: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if line.strip().startswith("Legend"):
            break
        label = line.split(None, 1)[0] if line.strip() else ""
        if label not in known or label in links:
            continue
        rest = line.split(label, 1)[1]
        tokens, tail = _links(rest, len(columns))
        if len(tokens) < len(columns):
            notes.append(f"{clean_line(label)}: read {len(tokens)} of {len(columns)} link cells")
        links[label] = dict(zip(columns, tokens, strict=False))
        if label.startswith("GPU") and trailing:
            values = dict(zip(trailing, _trailing(tail, len(trailing)), strict=False))
            for name, target in (
                ("CPU Affinity", cpu),
                ("NUMA Affinity", numa),
                ("GPU NUMA ID", gpu_numa),
            ):
                if name in values:
                    target[label] = clean_line(values[name])
    missing = [c for c in columns if c not in links]
    if missing and links:
        notes.append(f"no row for {', '.join(clean_line(m) for m in missing)}")
    legend = {m.group(1): clean_line(m.group(2)) for line in lines if (m := _LEGEND.match(line))}
    nic_names = {n: legend[n] if n.startswith("NIC") else n for n in nics if n in legend}
    nic_names.update({n: n for n in nics if not n.startswith("NIC")})
    return Topology(
        gpus=tuple(clean_line(g) for g in gpus),
        nics=tuple(clean_line(n) for n in nics),
        nic_names=nic_names,
        links={clean_line(r): {clean_line(c): t for c, t in v.items()} for r, v in links.items()},
        cpu_affinity=cpu,
        numa_affinity=numa,
        gpu_numa_id=gpu_numa,
        notes=tuple(notes),
    )


def _is_header(line: str) -> bool:
    """The header starts with GPU0 and goes on with labels, not with a link token (a row)."""
    pieces = _HEADER_TOKEN.findall(line)
    return len(pieces) >= 2 and pieces[0] == "GPU0" and not _LINK.fullmatch(" " + pieces[1])


def _header(line: str) -> tuple[list[str], list[str]]:
    columns: list[str] = []
    trailing: list[str] = []
    seen: set[str] = set()
    for piece in _HEADER_TOKEN.findall(line):
        if piece in TRAILING:
            trailing.append(piece)
        elif not trailing and piece not in seen:
            seen.add(piece)
            columns.append(piece)
    return columns, trailing


def _links(rest: str, count: int) -> tuple[list[str], str]:
    """Up to `count` link tokens from the start of `rest`, glued or not; and what follows."""
    tokens: list[str] = []
    pos = 0
    while len(tokens) < count:
        m = _LINK.match(rest, pos)
        if not m:
            break
        tokens.append(m.group(1))
        pos = m.end()
    return tokens, rest[pos:]


def _trailing(tail: str, count: int) -> list[str]:
    """Affinity cells after the links. With tabs, an empty cell is a real empty value except
    the doubled tab nvidia-smi prints before an `N/A` cell (`0-7\t\tN/A\t\tN/A`: NUMA
    Affinity and GPU NUMA ID both N/A, HAMi#99) and before the last column; with spaces,
    cells are words."""
    if "\t" not in tail:
        return tail.split()[:count]
    cells = [c.strip() for c in tail.split("\t")]
    if cells and not cells[0]:
        cells = cells[1:]
    cells = [c for i, c in enumerate(cells) if c or i + 1 >= len(cells) or cells[i + 1] != "N/A"]
    while len(cells) > count and len(cells) >= 2 and not cells[-2]:
        del cells[-2]
    while len(cells) > count and not cells[-1]:
        cells.pop()
    return cells[:count]
