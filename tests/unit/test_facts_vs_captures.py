"""Every facts row agrees with every real capture in tests/fixtures (issue 31, item 8).

The walker reads each fixture file (derived `*-varied-*` files excluded: nobody printed them)
for a torch wheel's version beside its `torch.cuda.get_arch_list()`: the verify program's
JSON (`"torch": {"version": ..., "arch_list": [...]}`) and REPL pastes ('2.11.0+cu128' then
['sm_75', ...]). Each pair is checked against gpudash.checks.facts.torch_builds: a published
build the table lists must carry exactly the SASS and PTX targets the real wheel printed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from gpudash.checks.facts.binary_compat import parse_arch_list
from gpudash.checks.facts.torch_builds import find
from tests.support import FIXTURES

_VERSION = re.compile(r"'(\d+\.\d+\.\d+\+cu\d{3})'")
_LIST = re.compile(r"\[((?:\s*'(?:sm|compute)_\d+[af]?',?)+)\s*\]")


def _json_pairs(data: object) -> Iterator[tuple[str, tuple[str, ...]]]:
    if isinstance(data, dict):
        version, arch = data.get("version"), data.get("arch_list")
        if isinstance(version, str) and isinstance(arch, list) and "+cu" in version:
            yield version, tuple(str(a) for a in arch)
        for value in data.values():
            yield from _json_pairs(value)
    elif isinstance(data, list):
        for value in data:
            yield from _json_pairs(value)


def _text_pairs(text: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """A version string, then the first arch list printed after it (before the next one)."""
    versions = list(_VERSION.finditer(text))
    for i, m in enumerate(versions):
        end = versions[i + 1].start() if i + 1 < len(versions) else len(text)
        listed = _LIST.search(text, m.end(), end)
        if listed:
            yield m.group(1), tuple(re.findall(r"'([^']+)'", listed.group(1)))


def captures() -> list[tuple[Path, str, tuple[str, ...]]]:
    out = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or "varied" in path.name or path.suffix not in (".json", ".txt"):
            continue
        text = path.read_text(errors="replace")
        if "arch_list" not in text and "get_arch_list" not in text:
            continue
        if path.suffix == ".json":
            try:
                pairs = list(_json_pairs(json.loads(text)))
            except ValueError:
                continue
        else:
            pairs = list(_text_pairs(text))
        out.extend((path, version, arch) for version, arch in pairs)
    return out


def targets(arch_list: str) -> set[str]:
    """A TORCH_CUDA_ARCH_LIST as the names get_arch_list() prints: sm_XY[a], compute_XY."""
    out = set()
    for t in parse_arch_list(arch_list):
        digits = f"{t.cc[0]}{t.cc[1]}"
        out.add(f"sm_{digits}{t.suffix}")
        if t.ptx:
            out.add(f"compute_{digits}")
    return out


def test_the_walker_finds_the_real_captures_it_is_meant_to_check():
    found = {(p.name, v) for p, v, _ in captures()}
    assert ("h200-1x.json", "2.11.0+cu130") in found  # the verify run on the lent H200
    assert ("torch-arch-lists-pytorch-182250.txt", "2.10.0+cu128") in found
    assert ("torch-arch-lists-pytorch-182250.txt", "2.11.0+cu126") in found


def test_every_torch_row_agrees_with_every_real_arch_list_in_the_fixtures():
    wrong = []
    checked = 0
    for path, version, arch in captures():
        release, _, variant = version.partition("+")
        row = find(release, variant)
        if row is None:
            continue
        checked += 1
        if targets(row.arch_list) != set(arch):
            wrong.append(
                f"{path.relative_to(FIXTURES)}: torch {version} printed {sorted(arch)}, "
                f"the table says {row.arch_list} ({sorted(targets(row.arch_list))})"
            )
    assert checked >= 4
    assert wrong == []


def test_the_2_11_cu130_wheel_has_no_ptx_for_newer_gpus():
    """The row once claimed 12.0+PTX; the real wheel on the H200 printed no compute_120."""
    row = find("2.11", "cu130")
    assert row is not None and "compute_120" not in targets(row.arch_list)
