"""What NVIDIA documents about drivers, toolkits and GPU architectures, as tables.

Minor-version compatibility (docs.nvidia.com/deploy/cuda-compatibility, "Minor Version
Compatibility", and the toolkit release notes' table of minimum drivers): from CUDA 11 on, an
application built with any CUDA X.y runs (with a limited feature set: no PTX JIT of newer PTX)
on a driver of at least the family minimum below, even when that driver natively supports only
an older X.z. Across major versions there is no such rule: a CUDA 13 build needs a 580+ driver.
"""

from __future__ import annotations

# CUDA major -> the minimum driver for minor-version compatibility: one table, with its
# sources, in the facts.
from gpudash.checks.facts.cuda_driver import MVC_MIN_DRIVER
from gpudash.versions import Version, compare, parse_version, short

# The driver each toolkit release shipped with (release notes, "CUDA Toolkit and
# Corresponding Driver Versions", Linux x86_64): the newest CUDA a driver supports natively.
# Only used when nvidia-smi did not print "CUDA Version" itself.
TOOLKIT_DRIVER: tuple[tuple[Version, Version], ...] = (
    ((13, 0), (580, 65, 6)),
    ((12, 9), (575, 51, 3)),
    ((12, 8), (570, 26)),
    ((12, 6), (560, 28, 3)),
    ((12, 5), (555, 42, 2)),
    ((12, 4), (550, 54, 14)),
    ((12, 3), (545, 23, 6)),
    ((12, 2), (535, 54, 3)),
    ((12, 1), (530, 30, 2)),
    ((12, 0), (525, 60, 13)),
    ((11, 8), (520, 61, 5)),
    ((11, 7), (515, 43, 4)),
    ((11, 6), (510, 39, 1)),
    ((11, 5), (495, 29, 5)),
    ((11, 4), (470, 42, 1)),
    ((11, 3), (465, 19, 1)),
    ((11, 2), (460, 27, 3)),
    ((11, 1), (455, 23, 4)),
    ((11, 0), (450, 36, 6)),
)

# Compute capability -> the first CUDA release whose compiler can target it (release notes:
# 11.8 added sm_89/sm_90; 12.8 sm_100, sm_101 and sm_120; 12.9 sm_103 and sm_121; 13.0
# renamed Thor's sm_101 to sm_110).
MIN_CUDA_FOR_CC: dict[tuple[int, int], Version] = {
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 7): (11, 4),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
    (10, 0): (12, 8),
    (10, 1): (12, 8),
    (10, 3): (12, 9),
    (11, 0): (13, 0),
    (12, 0): (12, 8),
    (12, 1): (12, 9),
}

# Architectures a CUDA major no longer compiles for: 12.0 dropped Kepler (< 5.0), 13.0 dropped
# Maxwell, Pascal and Volta (< 7.5).
DROPPED_BELOW: dict[int, tuple[int, int]] = {12: (5, 0), 13: (7, 5)}


def driver_cuda(driver_version: str | None, reported: str | None) -> tuple[Version | None, str]:
    """The newest CUDA the driver supports natively, and where that came from."""
    parsed = parse_version(reported)
    if parsed is not None:
        return parsed[:2], "nvidia-smi"
    driver = parse_version(driver_version)
    if driver is None:
        return None, "unknown"
    for cuda, shipped in TOOLKIT_DRIVER:
        if compare(driver, shipped) >= 0:
            return cuda, "driver table"
    return None, "driver older than CUDA 11"


def can_run(cuda: Version, driver: Version | None, native: Version | None) -> str:
    """How a CUDA `cuda` build fares on this driver: "native" (the driver supports that CUDA),
    "minor" (only through minor-version compatibility), "no", or "unknown"."""
    if native is not None and compare(cuda[:2], native) <= 0:
        return "native"
    if driver is None:
        return "unknown"
    minimum = parse_version(MVC_MIN_DRIVER.get(cuda[0]))
    if minimum is not None and compare(driver, minimum) >= 0:
        return "minor"
    return "no"


def min_driver_for(cuda: Version) -> str | None:
    """The oldest driver that runs a CUDA `cuda` build (through minor-version compatibility)."""
    return MVC_MIN_DRIVER.get(cuda[0])


def cc_tuple(cc: str | None) -> tuple[int, int] | None:
    parsed = parse_version(cc)
    if parsed is None or len(parsed) < 2:
        return None
    return parsed[0], parsed[1]


def can_target(cuda: Version, cc: tuple[int, int]) -> tuple[bool | None, str]:
    """Whether a CUDA `cuda` build can carry kernels for compute capability `cc`, and why not."""
    dropped = DROPPED_BELOW.get(cuda[0])
    if dropped is None and cuda[0] > 13:
        dropped = DROPPED_BELOW[13]
    if dropped is not None and cc < dropped:
        return False, f"CUDA {cuda[0]} no longer targets compute capability below {short(dropped)}"
    minimum = MIN_CUDA_FOR_CC.get(cc)
    if minimum is None:
        known = [c for c in MIN_CUDA_FOR_CC if c <= cc]
        if not known:
            return True, ""
        if cc > max(MIN_CUDA_FOR_CC):
            return None, f"sm_{cc[0]}{cc[1]} is newer than gpudash's table"
        minimum = MIN_CUDA_FOR_CC[max(known)]
    if compare(cuda[:2], minimum) < 0:
        return False, f"sm_{cc[0]}{cc[1]} needs CUDA >= {short(minimum)}"
    return True, ""
