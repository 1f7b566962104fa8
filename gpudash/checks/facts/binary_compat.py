"""When a compiled CUDA kernel runs on a GPU of compute capability X.z: the rule, as data.

Source: CUDA C++ Programming Guide, "Binary Compatibility" / "PTX Compatibility"
(docs.nvidia.com/cuda/cuda-c-programming-guide/): a cubin for X.y runs on X.z with z >= y
(same major only); PTX for compute_XY is JIT-compiled by the driver for any cc >= X.Y, provided
the driver understands that PTX version (not through minor-version compatibility).
Arch-specific targets (sm_90a, sm_100a) run only on exactly that cc; family-specific targets
(sm_100f, sm_120f) run on the same major with a higher or equal minor (NVIDIA blog "NVIDIA
Blackwell and NVIDIA CUDA 12.9 Introduce Family-Specific Architecture Features", cited in
vllm-project/vllm CMakeLists.txt @000a1ee93b2ddc3cb06c62a71fe769c789cbf7b1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TARGET = re.compile(r"^\s*(\d{1,2})\.(\d)([af]?)(\+PTX)?\s*$")


@dataclass(frozen=True)
class Target:
    """One entry of an arch list: 9.0, 9.0a, 12.0f, 12.0+PTX."""

    cc: tuple[int, int]
    suffix: str  # "", "a" or "f"
    ptx: bool

    @property
    def sm(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}{self.suffix}"


def parse_arch_list(text: str) -> tuple[Target, ...]:
    """`7.5;8.0;12.0+PTX` or `7.5 8.0 9.0a` -> targets; entries that do not parse are dropped."""
    out = []
    for part in re.split(r"[;\s]+", text or ""):
        m = _TARGET.match(part)
        if m:
            out.append(Target((int(m.group(1)), int(m.group(2))), m.group(3), bool(m.group(4))))
    return tuple(out)


def sass_runs(target: Target, cc: tuple[int, int]) -> bool:
    """Whether `target`'s cubin executes on a GPU of compute capability `cc`."""
    if target.suffix == "a":
        return target.cc == cc
    return target.cc[0] == cc[0] and cc[1] >= target.cc[1]


def ptx_runs(target: Target, cc: tuple[int, int]) -> bool:
    """Whether `target`'s PTX (if any) can be JIT-compiled for `cc`."""
    return target.ptx and target.suffix == "" and cc >= target.cc
