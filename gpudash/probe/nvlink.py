"""`nvidia-smi nvlink -s`: per-GPU link state and speed.

Active links print `Link 0: 26.562 GB/s`; down ones `Link 3: <inactive>`. A VM without NVLink
prints nothing at all, and a B200 whose fabric is down prints
"NVML: Unable to retrieve NVLink information as all links are inActive" under its GPU line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudash.text import clean_line, strip_escapes

# Only line heads are matched by regex; the rest is split with str methods. (A lazy `.*?`
# before `\s*(...)?\s*$` made `GPU 0: x<3000 spaces>y` cubic: issue 20.)
_GPU = re.compile(r"\s*GPU\s+(?P<index>\d+)\s*:")
_LINK = re.compile(r"\s*Link\s+(?P<link>\d+)\s*:", re.I)
_SPEED = re.compile(r"^(?P<speed>\d+(?:\.\d+)?)\s*GB/s$", re.I)
_ALL_INACTIVE = re.compile(r"all links are inactive", re.I)


@dataclass(frozen=True)
class NvLink:
    link: int
    speed_gbps: float | None
    active: bool

    def to_json(self) -> dict[str, object]:
        return {"link": self.link, "speed_gbps": self.speed_gbps, "active": self.active}


@dataclass(frozen=True)
class NvlinkGpu:
    index: int | None
    name: str | None
    uuid: str | None
    links: tuple[NvLink, ...] = ()
    all_inactive: bool = False  # NVML said so instead of listing links

    @property
    def active_links(self) -> int:
        return sum(1 for link in self.links if link.active)

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "links": [link.to_json() for link in self.links],
        }


@dataclass(frozen=True)
class NvlinkStatus:
    gpus: tuple[NvlinkGpu, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"gpus": [g.to_json() for g in self.gpus]}


def _name_uuid(rest: str) -> tuple[str, str | None]:
    """`NVIDIA H200 (UUID: GPU-...)`: the name and the UUID (None when not given)."""
    at = rest.rfind("(UUID:")
    if at < 0 or not rest.endswith(")") or ")" in rest[at:-1]:
        return rest, None
    return rest[:at].strip(), rest[at + 6 : -1]


def parse_nvlink(text: str) -> NvlinkStatus:
    """Read `nvlink -s`; never raises. Empty output means no NVLink (no GPUs listed)."""
    if not isinstance(text, str):
        return NvlinkStatus(notes=("no text",))
    lines = strip_escapes(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    gpus: list[NvlinkGpu] = []
    notes: list[str] = []
    links: list[NvLink] = []
    current: NvlinkGpu | None = None

    def flush() -> None:
        if current is not None:
            gpus.append(
                NvlinkGpu(
                    current.index, current.name, current.uuid, tuple(links), current.all_inactive
                )
            )

    for line in lines:
        if m := _GPU.match(line):
            flush()
            name, uuid = _name_uuid(line[m.end() :].strip())
            current = NvlinkGpu(
                int(m.group("index")),
                clean_line(name) or None,
                clean_line(uuid.strip()) if uuid and uuid.strip() else None,
            )
            links = []
        elif m := _LINK.match(line):
            if current is None:
                current = NvlinkGpu(None, None, None)
                notes.append("link lines before any GPU line")
            speed = _SPEED.match(line[m.end() :].strip())
            value = float(speed.group("speed")) if speed else None
            links.append(NvLink(int(m.group("link")), value, speed is not None))
        elif _ALL_INACTIVE.search(line):
            notes.append(clean_line(line.strip()))
            if current is not None:
                current = NvlinkGpu(current.index, current.name, current.uuid, (), True)
        elif line.strip() and not set(line.strip()) <= {"."}:
            notes.append(f"unread line: {clean_line(line.strip())[:120]}")
    flush()
    return NvlinkStatus(tuple(gpus), tuple(notes))
