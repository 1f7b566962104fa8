"""The minimum Linux x86_64 driver of each CUDA release, natively and through minor-version
compatibility (MVC).

NATIVE_MIN_DRIVER: NVIDIA CUDA Toolkit Release Notes, Table 3 "CUDA Toolkit and Corresponding
Driver Versions" (docs.nvidia.com/cuda/cuda-toolkit-release-notes/, 13.2 Update 2 edition, read
from a stored copy, index id 70889381901), the GA row of each release.

MVC_MIN_DRIVER: docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
(v590), Table 1: CUDA 13.x >= 580, 12.x >= 525, 11.x >= 450, with the note that 11.x MVC needs
450.80.02; 12.x's floor is the 12.0 GA driver 525.60.13 (Table 3 above). Under MVC a driver
cannot JIT PTX newer than itself (same page, "limited feature set").
"""

from __future__ import annotations

NATIVE_MIN_DRIVER: dict[tuple[int, int], str] = {
    # 11.0-11.7, 12.0, 12.2, 12.3, 12.5: the same Table 3, as carried by gpudash.checks.cuda's
    # TOOLKIT_DRIVER before these facts (GA rows, Linux x86_64).
    (11, 0): "450.36.06",
    (11, 1): "455.23.04",
    (11, 2): "460.27.03",
    (11, 3): "465.19.01",
    (11, 4): "470.42.01",
    (11, 5): "495.29.05",
    (11, 6): "510.39.01",
    (11, 7): "515.43.04",
    (12, 0): "525.60.13",
    (12, 2): "535.54.03",
    (12, 3): "545.23.06",
    (12, 5): "555.42.02",
    (11, 8): "520.61.05",  # CUDA 11.8 GA
    (12, 1): "530.30.02",  # CUDA 12.1 GA
    (12, 4): "550.54.14",  # CUDA 12.4 GA
    (12, 6): "560.28.03",  # CUDA 12.6 GA
    (12, 8): "570.26",  # CUDA 12.8 GA
    (12, 9): "575.51.03",  # CUDA 12.9 GA
    (13, 0): "580.65.06",  # CUDA 13.0 GA
    (13, 2): "595.45.04",  # CUDA 13.2 GA
}

MVC_MIN_DRIVER: dict[int, str] = {
    11: "450.80.02",
    12: "525.60.13",
    # The page says ">= 580"; the first 580 driver is the 13.0 GA 580.65.06 (Table 3), so the
    # floor is written as that version: a fix can then name an installable driver.
    13: "580.65.06",
}
