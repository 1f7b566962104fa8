"""`nvcc --version`: which CUDA toolkit a host would compile with.

The toolkit release (what `pip install` wheels and JIT kernels need) can differ from the
driver's CUDA version in the smi header, so it is read separately. The output looks like:

    Cuda compilation tools, release 13.0, V13.0.88
    Build cuda_13.0.r13.0/compiler.36424714_0
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudash.text import clean_line, strip_escapes

_RELEASE = re.compile(r"release\s+(\d+(?:\.\d+)*)\s*,\s*V?(\d+(?:\.\d+)*)", re.I)
_RELEASE_ONLY = re.compile(r"release\s+(\d+(?:\.\d+)*)", re.I)
_BUILD = re.compile(r"^\s*Build\s+(cuda_\S+)", re.I | re.M)


@dataclass(frozen=True)
class NvccVersion:
    release: str | None = None
    version: str | None = None
    build: str | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"release": self.release, "version": self.version, "build": self.build}


_NOT_FOUND = re.compile(r":?\s*(?:command\s+)?not found", re.I)


def _missing(text: str) -> bool:
    r"""`nvcc: not found`, `nvcc: command not found`, `No such file`. Line by line, with
    `nvcc\S*` found by str methods: the regex `nvcc\S*:?\s*...` searched over the whole text
    was quadratic on `nvccnvcc...` (issue 20)."""
    if "No such file" in text:
        return True
    for line in text.split("\n"):
        low = line.lower()
        at = low.find("nvcc")
        if at < 0 or "not found" not in low:
            continue
        end = at + 4
        while end < len(low) and not low[end].isspace():
            end += 1
            if low[end - 1] == ":" and _NOT_FOUND.match(low, end - 1):
                return True
        if _NOT_FOUND.match(low, end):
            return True
    return False


def parse_nvcc(text: str) -> NvccVersion:
    """Read release, full version and build tag; all None (with a note) for anything else."""
    if not isinstance(text, str):
        return NvccVersion(notes=("no text",))
    text = strip_escapes(text).replace("\r", "")
    if not text.strip():
        return NvccVersion(notes=("empty output",))
    if _missing(text):
        return NvccVersion(notes=(f"nvcc missing: {clean_line(text.strip()[:120])}",))
    m = _RELEASE.search(text)
    release = version = None
    if m:
        release, version = m.group(1), m.group(2)
    elif m2 := _RELEASE_ONLY.search(text):
        release = m2.group(1)
    b = _BUILD.search(text)
    build = clean_line(b.group(1)) if b else None
    notes: list[str] = []
    if release is None:
        notes.append("no 'Cuda compilation tools, release' line: not nvcc output")
    elif version is None:
        notes.append("release line without a V<version>")
    return NvccVersion(release, version, build, tuple(notes))
