"""Version numbers and the small spec language of `expect` (">=580", "13.0", "2.11.*").

    parse_version("580.159.04")   -> (580, 159, 4)
    parse_version("2.11.0+cu130") -> (2, 11, 0)      local and pre-release parts ignored
    Spec.parse(">=12.8,<13")      clauses joined by commas, all must hold
    Spec.parse("13.0")            a bare version is a prefix: 13.0, 13.0.88 match; 13.1 not
    Spec.parse("2.11.*")          the same, written as a wildcard

Comparisons pad with zeros: 580 == 580.0.0, so ">=580" accepts 580.65.06.

A leaf: it imports nothing of gpudash, so the parsers (gpudash.probe), the config and the
checks all read versions the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, ...]

_VERSION = re.compile(r"^\s*v?(\d{1,9}(?:\.\d{1,9})*)")
_LOCAL_CUDA = re.compile(r"\+cu(\d{1,2})(\d)(?!\d)")
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<|=)?\s*(\d{1,9}(?:\.\d{1,9})*)(\.\*)?\s*$")


def parse_version(text: str | None) -> Version | None:
    """The leading dotted numbers of `text`; None when it does not start with one."""
    if not isinstance(text, str):
        return None
    m = _VERSION.match(text)
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def local_cuda(version: str | None) -> Version | None:
    """The CUDA a wheel was built for, from its `+cuNNN` local tag: `2.11.0+cu130` -> (13, 0),
    `0.1.6+cu124torch2.4` -> (12, 4); None without one (a CPU build, a conda package).

    The last digit is the minor version (cu126 = 12.6, cu130 = 13.0): the PyTorch index names
    its builds so, e.g. https://download.pytorch.org/whl/cu121 serves torch==2.1.0+cu121 for
    CUDA 12.1 (install line quoted at https://www.cnblogs.com/owlowl/p/17808195.html, 2023)."""
    m = _LOCAL_CUDA.search(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _pad(a: Version, b: Version) -> tuple[Version, Version]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def compare(a: Version, b: Version) -> int:
    """-1, 0 or 1, padding the shorter with zeros."""
    x, y = _pad(a, b)
    return (x > y) - (x < y)


def at_least(version: str | None, minimum: Version) -> bool | None:
    """`version` >= `minimum`; None when `version` is not a version."""
    parsed = parse_version(version)
    return None if parsed is None else compare(parsed, minimum) >= 0


def short(version: Version) -> str:
    return ".".join(str(p) for p in version)


@dataclass(frozen=True)
class Clause:
    op: str  # ">=", "<=", ">", "<", "==", "!=", or "prefix"
    version: Version

    def matches(self, v: Version) -> bool:
        if self.op == "prefix":
            return v[: len(self.version)] == self.version
        c = compare(v, self.version)
        return {
            ">=": c >= 0,
            "<=": c <= 0,
            ">": c > 0,
            "<": c < 0,
            "==": c == 0,
            "!=": c != 0,
        }[self.op]


@dataclass(frozen=True)
class Spec:
    text: str
    clauses: tuple[Clause, ...]

    @classmethod
    def parse(cls, text: str) -> Spec | None:
        """The spec, or None when `text` is not one."""
        clauses = []
        for piece in text.split(","):
            m = _CLAUSE.match(piece)
            if not m:
                return None
            op, number, star = m.group(1), m.group(2), m.group(3)
            version = tuple(int(p) for p in number.split("."))
            if star and op not in (None, "==", "="):
                return None
            if op in (None, "=") or star:
                op = "prefix"
            clauses.append(Clause(op, version))
        return cls(text.strip(), tuple(clauses)) if clauses else None

    def matches(self, version: str | None) -> bool | None:
        """Whether `version` satisfies every clause; None when it is not a version."""
        parsed = parse_version(version)
        if parsed is None:
            return None
        return all(c.matches(parsed) for c in self.clauses)

    def __str__(self) -> str:
        return self.text
