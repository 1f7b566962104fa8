"""One readable line per section: what `gpudash probe` prints and the fleet view abbreviates.

Pure functions of parsed results; they never see raw remote text (parsers cleaned it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpudash.model import SectionResult


def section_line(result: SectionResult) -> str:
    if result.data is None:
        return f"error: {result.error}" if result.error else "no data"
    line = _LINES.get(result.name, _generic)(result.data)
    return f"{line}  [{result.error}]" if result.error else line


def gib(mib: float | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.0f} GiB"


def human_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit in ("B", "KB") else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def gpus_line(data: Any) -> str:
    if data.missing:
        return data.missing
    if not data.gpus:
        return "no GPUs reported"
    groups: dict[str, int] = {}
    for g in data.gpus:
        groups[g.name] = groups.get(g.name, 0) + 1
    first = data.gpus[0]
    cc = f"cc {first.cc} {first.sm} {first.arch}" if first.cc else "cc ?"
    if first.cc_source == "name":
        cc += " (from name)"
    names = ", ".join(f"{n}× {name}" for name, n in groups.items())
    bits = [names, cc, gib(first.memory_total_mib)]
    bits.append(f"driver {data.driver_version or '?'} CUDA {data.cuda_version or '?'}")
    broken = [str(g.index) for g in data.gpus if g.error]
    if broken:
        bits.append(f"ERR! on GPU {','.join(broken)}")
    return " · ".join(bits)


def topology_line(data: Any) -> str:
    if data.missing:
        return data.missing
    line = data.summary
    if data.inactive_links:
        line += f" · {data.inactive_links} NVLink links inactive"
    return line


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes = int(seconds // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    return f"{days}d {hours}h" if days else f"{hours}h {mins}m"


def system_line(data: Any) -> str:
    cpu = f"{data.cpus or '?'} CPUs" + (f" ({data.cpu_model})" if data.cpu_model else "")
    memory = human_bytes(data.memory_total_bytes) + " RAM"
    return " · ".join(
        [
            data.hostname or "?",
            data.os or "?",
            f"kernel {data.kernel or '?'}",
            cpu,
            memory,
            f"up {duration(data.uptime_s)}",
        ]
    )


def toolkit_line(data: Any) -> str:
    bits = [
        ", ".join(f"nvcc {n.version or n.release or '?'} ({n.path})" for n in data.nvcc)
        or "nvcc: not found"
    ]
    if data.cuda_symlink:
        bits.append(f"/usr/local/cuda → {data.cuda_symlink}")
    if data.nccl:
        bits.append("NCCL " + ", ".join(sorted({lib.version or "?" for lib in data.nccl})))
    if data.cudnn:
        bits.append("cuDNN " + ", ".join(sorted({lib.version or "?" for lib in data.cudnn})))
    return " · ".join(bits)


def env_line(data: Any) -> str:
    python = next((p.version for p in data.pythons if p.version), None)
    bits = [f"python {python}" if python else "python3: not found"]
    bits.append(f"uv {data.uv.version or '?'}" if data.uv else "uv: not found")
    venvs = [
        f"{v.path} (torch {v.packages['torch']})" if "torch" in v.packages else v.path
        for v in data.venvs
    ]
    bits.append("venvs: " + ", ".join(venvs) if venvs else "no venv")
    return " · ".join(bits)


def models_line(data: Any) -> str:
    bits = []
    for d in data.dirs:
        if not d.exists:
            continue
        size = sum(m.size_bytes or 0 for m in d.models)
        broken = sum(not m.complete for m in d.models)
        text = f"{d.path}: {len(d.models)} models ({human_bytes(size)})"
        bits.append(text + (f", {broken} incomplete" if broken else ""))
    free = ", ".join(f"{fs.path} {human_bytes(fs.free_bytes)} free" for fs in data.filesystems)
    return " · ".join([*(bits or ["no model dirs"]), free] if free else bits or ["no model dirs"])


def network_line(data: Any) -> str:
    bits = []
    for t in data.targets:
        if t.ok:
            bits.append(
                f"{t.host} ok {t.latency_ms:.0f} ms" if t.latency_ms is not None else f"{t.host} ok"
            )
        else:
            bits.append(f"{t.host} FAILED ({t.error or 'no answer'})")
    bits.append("HF token: present" if data.hf_token else "HF token: absent")
    return " · ".join(bits)


def _generic(data: Any) -> str:
    return type(data).__name__


_LINES: dict[str, Callable[[Any], str]] = {
    "system": system_line,
    "gpus": gpus_line,
    "topology": topology_line,
    "toolkit": toolkit_line,
    "env": env_line,
    "models": models_line,
    "network": network_line,
}
