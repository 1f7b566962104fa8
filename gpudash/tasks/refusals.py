"""Tasks refused on a host before anything runs, from what its probe saw.

A verify on a host without an NVIDIA GPU would first install uv, a venv and a multi-GB CUDA
torch, then end "CPU-only build" (issue 33, item 3): the probe already knew. A kind that
`needs_gpu` is refused, with its needs, on a host whose probe answered and found neither
nvidia-smi nor NVML there. Unknown is not "no GPU": a host not probed, a GPU section that
failed, or an nvidia-smi that listed nothing (a driver in trouble is for verify to show) is
not refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpudash.tasks.prepare import Facts
from gpudash.tasks.spec import TaskSpec, order

NO_GPU = "no NVIDIA GPU or driver on this host"


def needs_gpu(specs: Mapping[str, TaskSpec], wanted: Iterable[str]) -> list[str]:
    """The tasks of `wanted` and their needs whose kind cannot work without a GPU."""
    return [name for name in order(specs, list(wanted)) if specs[name].kind_def.needs_gpu]


def refusal(
    specs: Mapping[str, TaskSpec], wanted: Iterable[str], facts: Facts | None
) -> str | None:
    """Why `wanted` cannot run on a host with these probe facts; None when it may (or when
    the facts say nothing about its GPUs)."""
    gpu_tasks = needs_gpu(specs, wanted)
    if not gpu_tasks or facts is None or not facts.known or facts.gpus is not None:
        return None
    return f"{NO_GPU}: its probe found no nvidia-smi or NVML ({', '.join(gpu_tasks)} needs a GPU)"
