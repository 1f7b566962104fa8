"""Architectures the serving engines' wheels carry kernels for, read from their repositories.

FlashInfer: `.github/workflows/release.yml` FLASHINFER_CUDA_ARCH_LIST at each tag (the
flashinfer-jit-cache wheels; flashinfer-python JIT-compiles but refuses below sm_75 too).
vLLM: the GPU floor each release states in its own installation docs, read at release tags
(VERSION_FLOORS: 7.0 through v0.14, 7.5 from v0.21; 0.15-0.20 not read); its per-CUDA arch
lists could only be read at one main commit (the snapshot is over the size limit and the index
holds one version of each file), so they are used above the stated floor only.
sgl-kernel: not read at a release tag (same limits; its docs state no floor): the rows cite
the main commit that was read, and say so.

What was tried to read these at release tags (issue 31 item 8, round 3), and why it failed:
- `fetch` of sgl-project/sglang (1.2 GB) and vllm-project/vllm (1.1 GB) is refused: over the
  500 MB snapshot limit. There is no separate sgl-kernel repository in the store (find_repos
  "sgl-kernel" lists only the -npu/-xpu ports).
- The file index holds versions at the commits a file changed in, but `find_files` names one
  commit per repository and `read_file` answers "stored, but not at that commit" for any
  other; a version found by `find_string` is read by id without its commit. So a version can
  be read only where its commit is already known, and no release's commit is: sgl-kernel is
  released by bumping the version in pyproject.toml and version.py on main (its PyPI README,
  "Release new version"; pypi.org/project/sgl-kernel/0.0.3.post7), not by a tag, and no page
  in the docs/pages corpora names the commit of a vLLM tag from v0.15 to v0.20.
- sgl-kernel/CMakeLists.txt: two stored versions were read, both main commits not tied to a
  release: 00390b86 (the rows below: x86_64 sm_80/sm_89/sm_90 up, sm_90a at 12.4+, 100a/120a
  at 12.8+, 103a at 13.0+) and an older 3ec6e094, whose ENABLE_BELOW_SM90 list (on by default
  on x86_64) also carried compute_75/sm_75. So wheels of that older time may hold sm_75
  kernels; the maintainers' RFC sgl-project/sglang#6006 (2025-05-04) says sm75 support was
  to be deprecated in SGLang "v0.5". Which sgl-kernel release first dropped sm_75 is not
  established, so a cc 7.5 GPU under sgl-kernel is unknown (ENGINE_KNOWN_FROM), not a fail;
  below 7.5 no build read has kernels, a fail.
  Wheel evidence agrees with the 8.0 rows for recent wheels only: sglang#35526 (a contributor,
  2026-08: on recent x86_64 wheels the sm90 and sm100 builds share the flags, compute_80 and
  compute_89 included).
- The sgl-kernel wheel indexes (docs.sglang.io/whl/cu124|cu128|cu129|cu130/sgl-kernel) list
  which CUDA variants shipped per version (cu124 wheels up to 0.3.14.post1, cu130 from
  0.3.16.post4) but not their architectures.
- vLLM 0.15-0.20: docs.vllm.ai holds v0.14.0 ("compute capability 7.0 or higher") and v0.31.0
  / raw v0.21.0, v0.26.0 ("7.5 or higher"), none of v0.15.0-v0.20.x; the stored versions of
  docs/getting_started/installation/gpu.cuda.inc.md are main commits (0487d5c2 and the raw
  a5105dba say 7.5; their releases unknown). CMakeLists.txt was read at a second main commit,
  bc390b91 (TORCH_SUPPORTED_VERSION_CUDA "2.9.1"): its CUDA >= 12.8 list still began at 7.0
  ("7.0;7.2;7.5;...;10.0;10.1;12.0"); the 000a1ee9 row for CUDA 12.8-12.9 begins at 7.5.
  Both agree with
  the verdict as it stands: a release whose own docs state 7.0 is not failed on a V100 by a
  row read at another commit ("stated"), and a cc between 7.0 and 7.5 on 0.15-0.20 is
  "unknown", never failed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineBuild:
    package: str
    versions: str  # which releases the row covers, as read
    cuda_below: tuple[int, int] | None  # row applies to wheels built with CUDA < this
    arch_list: str
    source: str


_FI = "flashinfer-ai/flashinfer .github/workflows/release.yml"
ENGINE_BUILDS: tuple[EngineBuild, ...] = (
    # v0.2.14 (674f6991): TORCH_CUDA_ARCH_LIST "7.5 8.0 8.9 9.0+PTX" for every CUDA
    EngineBuild(
        "flashinfer",
        "0.2",
        None,
        "7.5 8.0 8.9 9.0+PTX",
        f"{_FI.replace('release.yml', 'release_wheel_x86_64.yml')} @v0.2.14",
    ),
    # v0.4.1 (a88349f9): 12.8 -> "7.5 8.0 8.9 9.0a 10.0a 12.0a", else adds 10.3a
    EngineBuild("flashinfer", "0.4", (12, 9), "7.5 8.0 8.9 9.0a 10.0a 12.0a", f"{_FI} @v0.4.1"),
    EngineBuild("flashinfer", "0.4", None, "7.5 8.0 8.9 9.0a 10.0a 10.3a 12.0a", f"{_FI} @v0.4.1"),
    # v0.5.3 (0e68a2fe): < 13.0 -> "... 12.0a", else "... 10.3a 11.0a 12.0f"
    EngineBuild("flashinfer", "0.5", (13, 0), "7.5 8.0 8.9 9.0a 10.0a 12.0a", f"{_FI} @v0.5.3"),
    EngineBuild(
        "flashinfer", "0.5", None, "7.5 8.0 8.9 9.0a 10.0a 10.3a 11.0a 12.0f", f"{_FI} @v0.5.3"
    ),
    # v0.6.17 (a0a6b019): < 12.9 / < 13.0 / x86_64 13.x
    EngineBuild("flashinfer", "0.6", (12, 9), "7.5 8.0 8.9 9.0a 10.0a 12.0a", f"{_FI} @v0.6.17"),
    EngineBuild(
        "flashinfer", "0.6", (13, 0), "7.5 8.0 8.9 9.0a 10.0a 10.3a 12.0f", f"{_FI} @v0.6.17"
    ),
    EngineBuild("flashinfer", "0.6", None, "7.5 8.0 8.9 9.0a 10.0a 10.3a 12.0f", f"{_FI} @v0.6.17"),
    # sgl-project/sglang sgl-kernel/CMakeLists.txt @00390b8633f913f53d98d3acdbc1ab8f0d62da1b
    # (x86_64, ENABLE_BELOW_SM90 on): sm_80, sm_89, sm_90, sm_90a (>=12.4), 100a/120a (>=12.8),
    # 103a (>=13.0). Not a release tag.
    EngineBuild(
        "sgl-kernel",
        "main@00390b86",
        (12, 8),
        "8.0 8.9 9.0 9.0a",
        "sgl-project/sglang sgl-kernel/CMakeLists.txt @00390b86",
    ),
    EngineBuild(
        "sgl-kernel",
        "main@00390b86",
        (13, 0),
        "8.0 8.9 9.0 9.0a 10.0a 12.0a",
        "sgl-project/sglang sgl-kernel/CMakeLists.txt @00390b86",
    ),
    EngineBuild(
        "sgl-kernel",
        "main@00390b86",
        None,
        "8.0 8.9 9.0 9.0a 10.0a 10.3a 12.0a",
        "sgl-project/sglang sgl-kernel/CMakeLists.txt @00390b86",
    ),
    # vllm-project/vllm CMakeLists.txt @000a1ee93b2ddc3cb06c62a71fe769c789cbf7b1
    # CUDA_SUPPORTED_ARCHS (the ceiling of what a wheel can hold; the release wheel's own list
    # is set by its build and was not read). Not a release tag.
    EngineBuild(
        "vllm",
        "main@000a1ee9",
        (12, 8),
        "7.0 7.5 8.0 8.6 8.7 8.9 9.0",
        "vllm-project/vllm CMakeLists.txt @000a1ee9",
    ),
    EngineBuild(
        "vllm",
        "main@000a1ee9",
        (13, 0),
        "7.5 8.0 8.6 8.7 8.9 9.0 10.0 10.1 10.3 12.0 12.1",
        "vllm-project/vllm CMakeLists.txt @000a1ee9",
    ),
    EngineBuild(
        "vllm",
        "main@000a1ee9",
        None,
        "7.5 8.0 8.6 8.7 8.9 9.0 10.0 11.0 12.0",
        "vllm-project/vllm CMakeLists.txt @000a1ee9",
    ),
)

# The lowest compute capability each engine's wheels run on at all (min of the lists above).
ENGINE_FLOOR: dict[str, tuple[int, int]] = {
    "flashinfer": (7, 5),  # every tag read: v0.2.14, v0.4.1, v0.5.3, v0.6.17
    "sgl-kernel": (7, 5),  # the older main 3ec6e094 built sm_75 (not a release: module doc)
    "vllm": (7, 0),  # the lowest any release claims; by release: VERSION_FLOORS
}

# Where builds read at different commits disagree and no release can be tied to either: the
# lowest cc the newest read build runs on. A cc from ENGINE_FLOOR up to it is unknown, not a
# fail (sgl-kernel @3ec6e094 carried sm_75, @00390b86 starts at sm_80; which release dropped
# sm_75 is not established, sgl-project/sglang#6006 planned it for SGLang v0.5).
ENGINE_KNOWN_FROM: dict[str, tuple[tuple[int, int], str]] = {
    "sgl-kernel": ((8, 0), "sgl-kernel main: 3ec6e094 built sm_75, 00390b86 starts at sm_80"),
}


@dataclass(frozen=True)
class VersionFloor:
    """An engine's own stated GPU floor for a range of its releases, read at release tags."""

    package: str
    first: tuple[int, int]  # first release series the statement was read at
    last: tuple[int, int] | None  # last series read with the same statement (None: on)
    floor: tuple[int, int]
    source: str


VERSION_FLOORS: tuple[VersionFloor, ...] = (
    # vLLM's installation page, "Requirements", at each release's own docs:
    # docs.vllm.ai/en/v0.3.3/getting_started/installation.html, .../v0.4.0.post1/...,
    # .../v0.9.0/getting_started/installation/gpu.html and .../v0.14.0/getting_started/
    # installation/gpu/: "GPU: compute capability 7.0 or higher (e.g., V100, T4, ...)".
    VersionFloor("vllm", (0, 3), (0, 14), (7, 0), "vLLM docs v0.3.3, v0.9.0, v0.14.0"),
    # vllm-project/vllm@v0.21.0 docs/getting_started/installation/gpu.cuda.inc.md: "GPU:
    # compute capability 7.5 or higher (e.g., T4, RTX20xx, A100, L4, H100, B200, etc.)".
    # Releases 0.15-0.20 were not read: their floor is 7.0 or 7.5, unknown which.
    VersionFloor("vllm", (0, 21), None, (7, 5), "vllm-project/vllm@v0.21.0 gpu.cuda.inc.md"),
)


def floor_of(package: str, version: str | None) -> tuple[tuple[int, int], tuple[int, int], str]:
    """(lowest cc that may run, lowest cc known to run, source) for one installed release.

    The two differ where the release falls between two read statements: a cc between them
    is unknown, not failed."""
    base = ENGINE_FLOOR[package]
    if package in ENGINE_KNOWN_FROM:
        known_from, source = ENGINE_KNOWN_FROM[package]
        return base, known_from, source
    rows = [r for r in VERSION_FLOORS if r.package == package]
    parts = [int(p) for p in (version or "").split(".")[:2] if p.isdigit()]
    if not rows or len(parts) < 2:
        return base, base, ""
    series = (parts[0], parts[1])
    for r in rows:
        if r.first <= series and (r.last is None or series <= r.last):
            return r.floor, r.floor, r.source
    before = [r for r in rows if r.last is not None and r.last < series]
    after = [r for r in rows if r.first > series]
    lo = max((r.floor for r in before), default=base)
    hi = min((r.floor for r in after), default=lo)
    return lo, max(lo, hi), "; ".join(r.source for r in (*before[-1:], *after[:1]))
