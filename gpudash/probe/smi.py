"""The default `nvidia-smi` table: the one place that shows the CUDA version the driver supports,
ERR! GPUs, and the process list.

Its box has changed shape over the years: 79 columns up to the 52x drivers, 89 since, and the
590+ drivers renamed the header labels (`KMD Version`, `CUDA UMD Version`). A broken GPU
prints `ERR!` in its cells, or a bare "Unable to determine the device handle for GPU ..." line
and no row at all. The "MIG devices:" block is a second table whose rows must not be read as
GPUs. So the parser works per section and per `|` cell, and matches values by pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudash.text import clean_line, strip_escapes

_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD)\s+Version:\s*(?P<driver>\S+)"
    r"(?:\s+CUDA(?:\s+UMD)?\s+Version:\s*(?P<cuda>[^\s|]+))?"
)
# Linear by construction (issue 20): no lazy `.*?` before `\s+`/`\s*$` (quadratic in a run of
# spaces); cells are stripped first and their last token split off with str methods.
_INDEX = re.compile(r"(?P<index>\d+)\s+")
_PM = ("On", "Off", "N/A", "ERR!")
_MAX_LOST_NOTES = 32
_FAN = re.compile(
    r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)\s*$"
)
_MEM = re.compile(r"(?<!\d)(?P<used>\d+|N/A|ERR!)\s*MiB\s*/\s*(?P<total>\d+|N/A|ERR!)\s*MiB")
_PROC = re.compile(
    r"(?P<gpu>\d+)\s+(?:(?P<gi>\S+)\s+(?P<ci>\S+)\s+)?(?P<pid>\d+)\s+(?P<type>[A-Z+]+)(?:\s|$)"
)
_PROC_MEM = re.compile(r"\d+MiB|N/A")
_FLOAT = re.compile(r"(\d+(?:\.\d+)?)\s*(?:W|C|%|MiB)?")
_MIG = re.compile(r"^\s*(?P<gpu>\d+)\s+(?P<gi>\d+)\s+(?P<ci>\d+)\s+(?P<mig>\d+)\s*$")
_HANDLE = re.compile(
    r"Unable to determine the device handle for (?:GPU\s*)?(?P<bus>[0-9A-Fa-f:.]+)?"
    r"|GPU (?P<bus2>[0-9A-Fa-f:.]+)?\s*(?::\s*)?GPU is lost|GPU is lost",
)
_MISSING = ("N/A", "[N/A]", "ERR!", "[Not Supported]", "Unknown Error", "")


@dataclass(frozen=True)
class SmiGpu:
    index: int | None
    name: str | None
    bus_id: str | None = None
    fan: int | None = None
    temp_c: int | None = None
    perf_state: str | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    util_percent: int | None = None
    uncorrected_ecc: int | None = None
    mig_mode: str | None = None
    persistence_mode: str | None = None
    error: bool = False

    def to_json(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in _GPU_KEYS}


_GPU_KEYS = tuple(SmiGpu.__dataclass_fields__)


@dataclass(frozen=True)
class SmiProcess:
    gpu: int | None
    pid: int | None
    type: str | None
    name: str | None
    memory_mib: int | None

    def to_json(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("gpu", "pid", "type", "name", "memory_mib")}


@dataclass(frozen=True)
class MigDevice:
    gpu: int
    gi: int
    ci: int
    mig: int
    memory_used_mib: int | None
    memory_total_mib: int | None


@dataclass(frozen=True)
class SmiTable:
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: tuple[SmiGpu, ...] = ()
    processes: tuple[SmiProcess, ...] = ()
    mig_devices: tuple[MigDevice, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "driver_version": self.driver_version,
            "cuda_version": self.cuda_version,
            "gpus": [g.to_json() for g in self.gpus],
            "processes": [p.to_json() for p in self.processes],
        }


def parse_smi(text: str) -> SmiTable:
    """Read the table; never raises, notes what it could not read."""
    if not isinstance(text, str):
        return SmiTable(notes=("no text",))
    text = strip_escapes(text).replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.strip() for line in text.split("\n")]
    notes: list[str] = []
    driver = cuda = None
    if m := _HEADER.search(text):
        driver = _text(m.group("driver"))
        cuda = _text(m.group("cuda"))
    else:
        notes.append("no 'NVIDIA-SMI ... Version' header line")
    gpus: list[SmiGpu] = []
    procs: list[SmiProcess] = []
    migs: list[MigDevice] = []
    section = ""
    record: list[list[str]] = []
    for line in lines:
        if "MIG devices:" in line:
            section = "mig"
        elif "Processes:" in line:
            section = "procs"
        elif "GPU  Name" in line or re.search(r"\|\s*GPU\s+Name\b", line):
            section = "gpus"
        if not line.startswith("|"):
            if section == "gpus" and record:
                gpus.extend(_gpu(record))
            record = []
            continue
        cells = [c for c in line.strip("|").split("|")]
        if section == "gpus":
            if _name(cells[0]) and record:
                gpus.extend(_gpu(record))
                record = []
            record.append(cells)
        elif section == "procs" and (proc := _process(line.strip("|"))):
            procs.append(proc)
        elif section == "mig" and (mig := _MIG.match(cells[0])):
            mem = _MEM.search(cells[1]) if len(cells) > 1 else None
            migs.append(
                MigDevice(
                    int(mig.group("gpu")),
                    int(mig.group("gi")),
                    int(mig.group("ci")),
                    int(mig.group("mig")),
                    _int(mem.group("used")) if mem else None,
                    _int(mem.group("total")) if mem else None,
                )
            )
    if record:
        gpus.extend(_gpu(record))
    gpus = _lost(text, gpus, notes)
    if driver and not gpus and not any("device handle" in n for n in notes):
        notes.append("no GPU rows in the table")
    return SmiTable(driver, cuda, tuple(gpus), tuple(procs), tuple(migs), tuple(notes))


def _gpu(record: list[list[str]]) -> list[SmiGpu]:
    """One GPU from its 2 or 3 box lines (name/bus/ecc, fan/memory/util, MIG mode)."""
    first = _name(record[0][0])
    if not first:
        return []
    index, name, pm = first
    joined = " ".join("|".join(cells) for cells in record)
    cell = [[c.strip() for c in cells] + ["", "", ""] for cells in record]
    bus = cell[0][1].split()
    fan = _FAN.match(cell[1][0]) if len(cell) > 1 else None
    mem = _MEM.search(cell[1][1]) if len(cell) > 1 else None
    util = cell[1][2].split()[0] if len(cell) > 1 and cell[1][2] else None
    shown = _text(name)
    return [
        SmiGpu(
            index=index,
            name=clean_line(shown) if shown else None,
            bus_id=clean_line(bus[0]) if bus and _text(bus[0]) else None,
            fan=_int(fan.group("fan")) if fan else None,
            temp_c=_int(fan.group("temp")) if fan else None,
            perf_state=_text(fan.group("perf")) if fan else None,
            power_w=_float(fan.group("pwr")) if fan else None,
            power_cap_w=_float(fan.group("cap")) if fan else None,
            memory_used_mib=_int(mem.group("used")) if mem else None,
            memory_total_mib=_int(mem.group("total")) if mem else None,
            util_percent=_int(util),
            uncorrected_ecc=_int(cell[0][2]),
            mig_mode=clean_line(m) if len(cell) > 2 and (m := _text(cell[2][2])) else None,
            persistence_mode=_text(pm),
            error="ERR!" in joined or "GPU is lost" in joined,
        )
    ]


def _lost(text: str, gpus: list[SmiGpu], notes: list[str]) -> list[SmiGpu]:
    """GPUs the driver lost print a line, not a row: flag the row with that bus id, or add one.

    A bus id (or no bus id) said again adds nothing, and notes stop at _MAX_LOST_NOTES: a
    host printing `GPU is lost` 200k times must cost one pass, not one per line per GPU."""
    table = len(gpus)
    seen: set[str | None] = set()
    said = 0
    for m in _HANDLE.finditer(text):
        bus = (m.group("bus") or m.group("bus2") or "").rstrip(":.") or None
        said += 1
        if said <= _MAX_LOST_NOTES:
            notes.append(clean_line(m.group(0)))
        if bus in seen:
            continue
        seen.add(bus)
        tail = bus.upper().split(":", 1)[-1] if bus else None
        hit = [i for i in range(table) if tail and (gpus[i].bus_id or "").upper().endswith(tail)]
        if hit:
            for i in hit:
                gpus[i] = _flag(gpus[i])
        else:
            gpus.append(
                SmiGpu(index=None, name=None, bus_id=clean_line(bus) if bus else None, error=True)
            )
    if said > _MAX_LOST_NOTES:
        notes.append(f"... and {said - _MAX_LOST_NOTES} more lines about lost GPUs")
    return gpus


def _flag(gpu: SmiGpu) -> SmiGpu:
    return SmiGpu(**{**{k: getattr(gpu, k) for k in _GPU_KEYS}, "error": True})


def _name(cell: str) -> tuple[int, str, str] | None:
    """`0  NVIDIA H200   On`: index, name, persistence mode; None when the cell is not that."""
    cell = cell.strip()
    m = _INDEX.match(cell)
    if not m:
        return None
    words = cell[m.end() :].rsplit(None, 1)
    if len(words) != 2 or words[1] not in _PM:
        return None
    return int(m.group("index")), words[0].strip(), words[1]


def _process(line: str) -> SmiProcess | None:
    line = line.strip()
    words = line.rsplit(None, 1)
    head, mem = (words[0], words[1]) if len(words) == 2 else ("", "")
    m = _PROC.match(head) if _PROC_MEM.fullmatch(mem) else None
    if not m:
        return None
    name = head[m.end() :].strip()
    return SmiProcess(
        gpu=int(m.group("gpu")),
        pid=int(m.group("pid")),
        type=clean_line(m.group("type")),
        name=clean_line(name) if name else None,
        memory_mib=_int(mem),
    )


def _text(value: str | None) -> str | None:
    v = (value or "").strip()
    return None if v in _MISSING else v


def _float(value: str | None) -> float | None:
    m = _FLOAT.fullmatch((value or "").strip())
    return float(m.group(1)) if m else None


def _int(value: str | None) -> int | None:
    f = _float(value)
    return int(f) if f is not None else None
