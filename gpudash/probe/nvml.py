"""The gpus section read in-process through NVML (`import pynvml`, from nvidia-ml-py).

It produces the same facts as the `nvidia-smi --query-gpu` part of the remote probe, as a
JSON part named "nvml" that the gpus parser reads; so save, replay and parsing stay one path.
Every field is read on its own: one unsupported query (common on VMs and new parts) is
"n/a" for that field, never a failed section.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

from gpudash.probe.stream import RawSection

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _load() -> Any | None:
    """pynvml initialised once per process, or None when the library or driver is absent."""
    with _lock:
        if "module" not in _state:
            try:
                import pynvml

                pynvml.nvmlInit()
                _state["module"] = pynvml
            except Exception as exc:  # ImportError, NVMLError_LibraryNotFound, driver errors
                _state["module"] = None
                _state["why"] = f"{type(exc).__name__}: {exc}"
        return _state["module"]


async def available() -> bool:
    return await asyncio.to_thread(_load) is not None


def _get(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def read() -> dict[str, Any]:
    """NVML facts as a JSON-ready dict (blocking: call it from a thread)."""
    n = _load()
    if n is None:
        return {"error": _state.get("why", "NVML unavailable")}
    cuda = _get(n.nvmlSystemGetCudaDriverVersion_v2)
    out: dict[str, Any] = {
        "driver_version": _text(_get(n.nvmlSystemGetDriverVersion)),
        "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
        "gpus": [],
        "processes": [],
    }
    for index in range(_get(n.nvmlDeviceGetCount) or 0):
        handle = _get(n.nvmlDeviceGetHandleByIndex, index)
        if handle is None:
            out["gpus"].append({"index": index, "name": "", "error": True})
            continue
        out["gpus"].append(_gpu(n, index, handle))
        out["processes"].extend(_processes(n, index, handle))
    return out


def _gpu(n: Any, index: int, h: Any) -> dict[str, Any]:
    cc = _get(n.nvmlDeviceGetCudaComputeCapability, h)
    pci = _get(n.nvmlDeviceGetPciInfo, h)
    mem = _get(n.nvmlDeviceGetMemoryInfo, h, n.nvmlMemory_v2) or _get(n.nvmlDeviceGetMemoryInfo, h)
    util = _get(n.nvmlDeviceGetUtilizationRates, h)
    power = _get(n.nvmlDeviceGetPowerUsage, h)
    limit = _get(n.nvmlDeviceGetPowerManagementLimit, h)
    mig = _get(n.nvmlDeviceGetMigMode, h)
    persistence = _get(n.nvmlDeviceGetPersistenceMode, h)
    return {
        "index": index,
        "name": _text(_get(n.nvmlDeviceGetName, h)) or "",
        "uuid": _text(_get(n.nvmlDeviceGetUUID, h)),
        "bus_id": _text(pci.busId) if pci is not None else None,
        "cc": f"{cc[0]}.{cc[1]}" if cc else None,
        "memory_total_mib": mem.total // 1048576 if mem is not None else None,
        "memory_used_mib": mem.used // 1048576 if mem is not None else None,
        "temp_c": _get(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
        "util_percent": util.gpu if util is not None else None,
        "power_w": round(power / 1000, 2) if power is not None else None,
        "power_limit_w": round(limit / 1000, 2) if limit is not None else None,
        "persistence": bool(persistence) if persistence is not None else None,
        "mig_mode": None if mig is None else ("Enabled" if mig[0] else "Disabled"),
        "ecc_uncorrected": _get(
            n.nvmlDeviceGetTotalEccErrors,
            h,
            n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
            n.NVML_VOLATILE_ECC,
        ),
        # A GPU that answers neither memory nor utilisation is what nvidia-smi shows as ERR!.
        "error": mem is None and util is None,
    }


def _processes(n: Any, index: int, h: Any) -> list[dict[str, Any]]:
    found = []
    for kind, fn in (
        ("C", n.nvmlDeviceGetComputeRunningProcesses),
        ("G", n.nvmlDeviceGetGraphicsRunningProcesses),
    ):
        for p in _get(fn, h) or ():
            used = getattr(p, "usedGpuMemory", None)
            found.append(
                {
                    "gpu": index,
                    "pid": p.pid,
                    "type": kind,
                    "name": _text(_get(n.nvmlSystemGetProcessName, p.pid)) or "",
                    "memory_mib": used // 1048576 if isinstance(used, int) else None,
                }
            )
    return found


def section(nonce: str) -> RawSection:
    """The gpus section as the probe script would frame it, with one part: "nvml"."""
    body = json.dumps(read())
    text = f"@@gpudash:{nonce}:part:nvml\n{body}\n@@gpudash:{nonce}:rc:nvml:0"
    return RawSection("gpus", 0, text)
