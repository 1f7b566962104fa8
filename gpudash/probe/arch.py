"""Compute capability → architecture name and `sm_XX` target, and a name-based fallback.

The driver reports the compute capability (`compute_cap` in `--query-gpu`, NVML's
`nvmlDeviceGetCudaComputeCapability`); what a user needs to know is which wheel or kernel
target that means (`sm_90`, `sm_100`, ...). Drivers older than ~510 lack the `compute_cap`
query field, so `cc_from_name` infers it from the marketing name, from a table of tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    name: str
    sm: str


# (major, minor) → name. Minor versions not listed fall back to the major's entry.
_BY_CC: dict[tuple[int, int], str] = {
    (3, 0): "Kepler",
    (3, 5): "Kepler",
    (3, 7): "Kepler",
    (5, 0): "Maxwell",
    (5, 2): "Maxwell",
    (5, 3): "Maxwell",
    (6, 0): "Pascal",
    (6, 1): "Pascal",
    (6, 2): "Pascal",
    (7, 0): "Volta",
    (7, 2): "Volta (Xavier)",
    (7, 5): "Turing",
    (8, 0): "Ampere",
    (8, 6): "Ampere",
    (8, 7): "Ampere (Orin)",
    (8, 9): "Ada",
    (9, 0): "Hopper",
    (10, 0): "Blackwell",
    (10, 3): "Blackwell Ultra",
    (11, 0): "Blackwell (Thor)",
    (12, 0): "Blackwell RTX/PRO",
    (12, 1): "Blackwell (GB10)",
}
_BY_MAJOR: dict[int, str] = {
    3: "Kepler",
    5: "Maxwell",
    6: "Pascal",
    7: "Volta",
    8: "Ampere",
    9: "Hopper",
    10: "Blackwell",
    11: "Blackwell",
    12: "Blackwell",
}
_CC = re.compile(r"^\s*(\d{1,2})\s*\.\s*(\d)\s*$|^\s*(?:sm_?)?(\d{1,2})(\d)\s*$", re.I)


def arch_for_cc(cc: str | None) -> Arch | None:
    """`"9.0"` → `Arch("Hopper", "sm_90")`; None for text that is not a compute capability.

    An unknown major (a future part) still gets its `sm_XY` so that the user sees the
    target, with the name "unknown".
    """
    if not isinstance(cc, str):
        return None
    m = _CC.match(cc)
    if not m:
        return None
    major, minor = (
        (int(m.group(1)), int(m.group(2)))
        if m.group(1)
        else (
            int(m.group(3)),
            int(m.group(4)),
        )
    )
    name = _BY_CC.get((major, minor)) or _BY_MAJOR.get(major, "unknown")
    return Arch(name, f"sm_{major}{minor}")


# Ordered: the first pattern that matches the (upper-cased, token-spaced) name wins, so more
# specific names come before the families they contain ("GB300" before "B300", "A100" before
# "A10", "RTX 6000 ADA" before "RTX 6000").
_BY_NAME: tuple[tuple[str, str], ...] = (
    # Blackwell
    (r"\bGB300\b|\bB300\b", "10.3"),
    (r"\bGB200\b|\bB200\b|\bB100\b", "10.0"),
    (r"\bGB10\b|\bDGX SPARK\b", "12.1"),
    (r"\bTHOR\b", "11.0"),
    (r"\bRTX PRO \d{4}\b.*\bBLACKWELL\b|\bRTX 50\d0\b|\bRTX 5\d{3} BLACKWELL\b", "12.0"),
    # Hopper
    (r"\bGH200\b|\bH200\b|\bH100\b|\bH800\b|\bH20\b", "9.0"),
    # Ada
    (r"\bL40S?\b|\bL4\b|\bL20\b|\bRTX 40\d0\b|\bRTX \d{4} ADA\b", "8.9"),
    # Ampere
    (r"\bA100\b|\bA800\b|\bA30\b", "8.0"),
    (r"\bA10G?\b|\bA40\b|\bA16\b|\bA2\b|\bRTX A\d{4}\b|\bA\d{4}\b|\bRTX 30\d0\b", "8.6"),
    (r"\bORIN\b", "8.7"),
    # Turing, Volta, Pascal
    (r"\bT4\b|\bRTX 20\d0\b|\bQUADRO RTX \d{4}\b|\bTITAN RTX\b|\bGTX 16\d0\b", "7.5"),
    (r"\bV100\S*\b|\bTITAN V\b", "7.0"),
    (r"\bXAVIER\b", "7.2"),
    (r"\bP100\b", "6.0"),
    (r"\bP40\b|\bP4\b|\bGTX 10\d0\b|\bTITAN XP?\b", "6.1"),
)
_NAME_CHARS = 256
_NAME_PATTERNS = tuple((re.compile(p), cc) for p, cc in _BY_NAME)


def cc_from_name(gpu_name: str) -> str | None:
    """Infer the compute capability from a GPU name, for drivers without `compute_cap`.

    Names arrive as "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "NVIDIA GeForce RTX
    4090" or cut short in the smi table ("NVIDIA H100 80GB HBM..."); tokens are compared
    after splitting on spaces, dashes and slashes, so a suffix like "-SXM2" does not hide them.
    """
    if not isinstance(gpu_name, str):
        return None
    gpu_name = gpu_name[:_NAME_CHARS]  # a name, not a document: bounded work per GPU
    name = re.sub(r"\.\.\.|…", " ", gpu_name.upper())
    name = " ".join(re.split(r"[\s\-_/,()]+", name))
    for pattern, cc in _NAME_PATTERNS:
        if pattern.search(name):
            return cc
    return None
