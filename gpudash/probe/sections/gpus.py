"""The gpus section: every GPU with its compute capability, memory, health and driver.

Remote hosts answer with `nvidia-smi --query-gpu` (CSV, one row per GPU) plus the default
`nvidia-smi` table, which alone carries the CUDA version the driver supports and the process
list. The local transport answers with NVML instead (part "nvml"); both parse to `Gpus`.
Drivers too old for the `compute_cap` field still get a cc: from the PCI device id
(`pci.device_id`, a field every driver knows), else from the name (a truncated one only by an
unambiguous prefix), marked with where it came from; a GPU none of these identify keeps
cc None, which the checks report (never guessed, never taken for "no GPU").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpudash.probe.markdown import md, md_table, mib, yes
from gpudash.probe.parts import Part
from gpudash.text import clean_line
from gpudash.units import gib

# Parsers load with the first parse, not with the section: the probe script needs only
# BODY, so the host starts before they load (host_probe.warm_parsers; issue 33 item 10).

NAME = "gpus"
TIMEOUT = 15.0

QUERY_FIELDS = (
    "index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,memory.free,"
    "driver_version,temperature.gpu,utilization.gpu,power.draw,power.limit,clocks.sm,"
    "clocks.max.sm,persistence_mode,mig.mode.current,ecc.errors.uncorrected.volatile.total,"
    "pci.device_id"
)
# Fields every driver since the 3xx series knows: the retry when a field is unknown.
QUERY_FIELDS_MIN = (
    "index,name,uuid,pci.bus_id,memory.total,memory.used,driver_version,pci.device_id"
)

BODY = f"""
gd_query() {{
  need nvidia-smi || return
  nvidia-smi --query-gpu={QUERY_FIELDS} --format=csv ||
    nvidia-smi --query-gpu={QUERY_FIELDS_MIN} --format=csv
}}
gd_smi() {{ need nvidia-smi || return; nvidia-smi; }}
part query gd_query
part smi gd_smi
"""


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str | None = None
    bus_id: str | None = None
    cc: str | None = None
    cc_source: str | None = None  # "driver", "pci_id" or "name" (inferred for old drivers)
    arch: str | None = None
    sm: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    temp_c: int | None = None
    util_percent: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    persistence: bool | None = None
    mig_mode: str | None = None
    ecc_uncorrected: int | None = None
    error: bool = False


@dataclass(frozen=True)
class GpuProcess:
    gpu: int | None
    pid: int | None
    type: str
    name: str
    memory_mib: int | None


@dataclass(frozen=True)
class Gpus:
    source: str  # "nvml", "nvidia-smi" or "none"
    missing: str | None = None  # e.g. "nvidia-smi: not found"
    no_smi: bool = False
    """`missing` is because there is no nvidia-smi to run: a short fact a list can show."""
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: tuple[Gpu, ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def models(self) -> tuple[str, ...]:
        """Distinct GPU names, in index order."""
        return tuple(dict.fromkeys(g.name for g in self.gpus))


GPU_TOOLS = {"query": "nvidia-smi --query-gpu", "smi": "nvidia-smi"}
"""The GPU tool each part runs (BODY): what a part that never ended is named by."""


def parse(parts: Mapping[str, Part]) -> Gpus:
    from gpudash.probe import arch, gpu_ids  # noqa: F401  # `_with_cc`'s, loaded with the parse
    from gpudash.probe.query import parse_query
    from gpudash.probe.smi import parse_smi

    if "nvml" in parts:
        return _from_nvml(parts["nvml"].text)
    query, smi = parts.get("query"), parts.get("smi")
    text = query.text if query else ""
    if "not found" in text and text.strip().endswith("not found"):
        return Gpus("none", missing=clean_line(text.strip()), no_smi="nvidia-smi" in text)
    table = parse_smi(smi.text) if smi else None
    rows = parse_query(text).rows if query and query.ok else ()
    gpus = _from_query(rows)
    notes: list[str] = []
    if not gpus and table is not None and table.gpus:
        gpus = tuple(_from_smi_row(g) for g in table.gpus)
        notes.append("GPU list read from the nvidia-smi table (the CSV query failed)")
    elif query is not None and query.ok and not gpus and text.strip():
        first = clean_line(text.strip().splitlines()[0][:200])
        notes.append(f"nvidia-smi --query-gpu printed no GPU rows: {first}")
    elif query is not None and not query.ok:
        notes.append(f"nvidia-smi --query-gpu failed: {clean_line(text.strip()[:200])}")
    if table is not None:
        gpus = _merge_errors(gpus, table)
    driver = (table.driver_version if table else None) or next(
        (clean_line(r["driver_version"]) for r in rows if r.get("driver_version")), None
    )
    return Gpus(
        source="nvidia-smi",
        driver_version=driver,
        cuda_version=table.cuda_version if table else None,
        gpus=gpus,
        processes=tuple(
            GpuProcess(
                p.gpu, p.pid, clean_line(p.type or ""), clean_line(p.name or ""), p.memory_mib
            )
            for p in (table.processes if table else ())
        ),
        notes=tuple(notes),
    )


def _with_cc(name: str, cc: str | None, device_id: str | None = None) -> dict[str, Any]:
    """The cc and where it came from: the driver, else the PCI id, else the name."""
    from gpudash.probe.arch import arch_for_cc, cc_from_name
    from gpudash.probe.gpu_ids import cc_from_name as cc_from_name_prefix
    from gpudash.probe.gpu_ids import cc_from_pci_id

    source = "driver" if cc else None
    if not cc:
        cc = cc_from_pci_id(device_id)
        source = "pci_id" if cc else None
    if not cc:
        # A name cut with "..." matches only by an unambiguous prefix of a known full name;
        # the token table reads full names (and cuts that keep the model token).
        cc = cc_from_name_prefix(name) or cc_from_name(name)
        source = "name" if cc else None
    arch = arch_for_cc(cc)
    return {
        "cc": cc,
        "cc_source": source,
        "arch": arch.name if arch else None,
        "sm": arch.sm if arch else None,
    }


def _int(value: str | None) -> int | None:
    from gpudash.probe.query import number

    n = number(value) if value is not None else None
    return None if n is None else int(n)


def _flag(value: str | None) -> bool | None:
    v = (value or "").strip().lower()
    return True if v in ("enabled", "on") else False if v in ("disabled", "off") else None


def _from_query(rows: Sequence[Mapping[str, str]]) -> tuple[Gpu, ...]:
    from gpudash.probe.query import number

    gpus = []
    for position, row in enumerate(rows):
        # Queries without the index field list GPUs in index order.
        index = _int(row.get("index")) if "index" in row else position
        if index is None or not row.get("name", "").strip():
            continue
        name = clean_line(row.get("name", ""))
        values = [v.strip() for v in row.values()]
        cc = row.get("compute_cap")
        gpus.append(
            Gpu(
                index=index,
                name=name,
                uuid=clean_line(row["uuid"]) if row.get("uuid") else None,
                bus_id=clean_line(row["pci.bus_id"]) if row.get("pci.bus_id") else None,
                **_with_cc(
                    name, cc if cc and number(cc) is not None else None, row.get("pci.device_id")
                ),
                memory_total_mib=_int(row.get("memory.total")),
                memory_used_mib=_int(row.get("memory.used")),
                temp_c=_int(row.get("temperature.gpu")),
                util_percent=_int(row.get("utilization.gpu")),
                power_w=number(row.get("power.draw") or ""),
                power_limit_w=number(row.get("power.limit") or ""),
                persistence=_flag(row.get("persistence_mode")),
                mig_mode=_mig(row.get("mig.mode.current")),
                ecc_uncorrected=_int(row.get("ecc.errors.uncorrected.volatile.total")),
                error=any("ERR!" in v or "GPU is lost" in v for v in values),
            )
        )
    return tuple(gpus)


def _mig(value: str | None) -> str | None:
    v = clean_line(value or "").strip()
    return v if v in ("Enabled", "Disabled") else None


def _from_smi_row(g: Any) -> Gpu:
    name = clean_line(g.name or "")
    return Gpu(
        index=g.index if g.index is not None else -1,
        name=name,
        bus_id=g.bus_id,
        **_with_cc(name, None),
        memory_total_mib=g.memory_total_mib,
        memory_used_mib=g.memory_used_mib,
        temp_c=g.temp_c,
        util_percent=g.util_percent,
        power_w=g.power_w,
        power_limit_w=g.power_cap_w,
        persistence=_flag(g.persistence_mode),
        mig_mode=_mig(g.mig_mode),
        ecc_uncorrected=g.uncorrected_ecc,
        error=bool(g.error),
    )


def _merge_errors(gpus: tuple[Gpu, ...], table: Any) -> tuple[Gpu, ...]:
    """A GPU the table shows as ERR! is flagged even when its CSV row looked fine."""
    broken = {g.index for g in table.gpus if g.error}
    if not broken:
        return gpus
    return tuple(replace(g, error=True) if g.index in broken else g for g in gpus)


def _from_nvml(text: str) -> Gpus:
    try:
        data = json.loads(text)
    except ValueError:
        return Gpus("nvml", notes=("NVML output was not JSON",))
    if not isinstance(data, dict):
        return Gpus("nvml", notes=("NVML output was not an object",))
    if data.get("error"):
        return Gpus("none", missing=clean_line(str(data["error"])))
    gpus = []
    for g in data.get("gpus") or ():
        name = clean_line(str(g.get("name") or ""))
        fields = {k: g.get(k) for k in Gpu.__dataclass_fields__ if k in g}
        fields.update(name=name, **_with_cc(name, g.get("cc")))
        gpus.append(Gpu(**fields))
    processes = tuple(
        GpuProcess(
            p.get("gpu"),
            p.get("pid"),
            p.get("type", ""),
            clean_line(p.get("name", "")),
            p.get("memory_mib"),
        )
        for p in data.get("processes") or ()
    )
    return Gpus(
        source="nvml",
        driver_version=data.get("driver_version"),
        cuda_version=data.get("cuda_version"),
        gpus=tuple(gpus),
        processes=processes,
    )


def shown_name(gpu: Gpu) -> str:
    """A GPU's name for a count ("7× NVIDIA A40, 1× unreadable (ERR!)"): nvidia-smi prints
    no name for a GPU it cannot read, which left "1× " with nothing after it."""
    return gpu.name or ("unreadable (ERR!)" if gpu.error else "unnamed")


def summary(data: Gpus) -> str:
    """The one line `gpudash probe` prints for this section."""
    if data.missing:
        return data.missing
    if not data.gpus:
        return "no GPUs reported"
    groups: dict[str, int] = {}
    for g in data.gpus:
        groups[shown_name(g)] = groups.get(shown_name(g), 0) + 1
    first = data.gpus[0]
    cc = f"cc {first.cc} {first.sm} {first.arch}" if first.cc else "cc ?"
    if first.cc_source in ("name", "pci_id"):
        cc += " (from PCI id)" if first.cc_source == "pci_id" else " (from name)"
    names = ", ".join(f"{n}× {name}" for name, n in groups.items())
    bits = [names, cc, gib(first.memory_total_mib)]
    bits.append(f"driver {data.driver_version or '?'} CUDA {data.cuda_version or '?'}")
    broken = [str(g.index) for g in data.gpus if g.error]
    if broken:
        bits.append(f"ERR! on GPU {','.join(broken)}")
    return " · ".join(bits)


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "GPUs"


def report(g: Gpus) -> list[str]:
    if g.missing:
        return [md(g.missing)]
    lines = [f"Driver {md(g.driver_version)}, CUDA {md(g.cuda_version)} (source: {md(g.source)})."]
    lines.append("")
    rows = []
    for gpu in g.gpus:
        rows.append(
            (
                gpu.index,
                ("ERR! " if gpu.error else "") + (gpu.name or "?"),
                f"{gpu.cc or '?'} {gpu.sm or ''}".strip(),
                f"{mib(gpu.memory_used_mib)} / {mib(gpu.memory_total_mib)}",
                "?" if gpu.temp_c is None else f"{gpu.temp_c} C",
                "?" if gpu.util_percent is None else f"{gpu.util_percent} %",
                _power(gpu.power_w, gpu.power_limit_w),
                yes(gpu.persistence),
                gpu.mig_mode or "?",
                "?" if gpu.ecc_uncorrected is None else gpu.ecc_uncorrected,
                gpu.bus_id,
            )
        )
    header = ["GPU", "Name", "CC", "Memory used", "Temp", "Util", "Power", "Persist.", "MIG"]
    lines += md_table([*header, "ECC unc.", "Bus"], rows)
    if g.processes:
        lines += ["", "Processes:", ""]
        procs = [(p.gpu, p.pid, p.type, p.name, p.memory_mib) for p in g.processes]
        lines += md_table(["GPU", "PID", "Type", "Name", "MiB"], procs)
    return lines


def _power(w: float | None, cap: float | None) -> str:
    if w is None and cap is None:
        return "?"
    return f"{'?' if w is None else f'{w:.0f}'} / {'?' if cap is None else f'{cap:.0f}'} W"
