"""Which CUDA variants each PyTorch release published, and each variant's TORCH_CUDA_ARCH_LIST.

Linux x86_64 wheels only (download.pytorch.org/whl/cuXYZ). An entry "X.Y" is SASS for sm_XY;
"X.Y+PTX" is SASS plus compute_XY PTX. The wheel build sets the list in
pytorch/builder `manywheel/build_cuda.sh` (through 2.5) and pytorch/pytorch
`.ci/manywheel/build_cuda.sh` (from 2.6); RELEASE.md carries the published matrix from 2.9 on.

Where a release tag could not be read here (pytorch/pytorch is too large to bring in whole;
the index holds one version of each file), the row cites what was read instead: the release's
RELEASE.md matrix as changed by the named PR, or get_arch_list() printed from the wheel in a
public thread. Releases or variants not listed were not established here and are unknown.

`.ci/manywheel/build_cuda.sh` at the release tags v2.7.0-v2.11.0 (issue 31, round 3) could not
be read: `fetch` of pytorch/pytorch is refused (over the 500 MB snapshot limit), and the file
index answers "stored, but not at that commit" for every commit but the ones it holds, none of
which is a tag or release-branch commit. What it holds agrees with the rows, PTX aside (the
release branch cut strips +PTX, see below): pytorch/pytorch@00c7a380 (12.6 / 12.8 with 7.0 /
12.9 arms: the 2.8 matrix, cited as _P28), pytorch/pytorch@799d09f2 (main after 13.0 was added:
12.6 "5.0;6.0;7.0;7.5;8.0;8.6;9.0", 12.8 "7.0;7.5;8.0;8.6;9.0;10.0;12.0", 13.0
"7.5;8.0;8.6;9.0;10.0;12.0+PTX", the 2.9/2.10 rows), and the fork poolsideai/pytorch@36d984f9
(11.8 "+3.7;9.0", 12.1 and 12.4 "+9.0", 12.6 "+9.0+PTX" on "5.0;6.0;7.0;7.5;8.0;8.6": the 2.6
matrix); ROCm/pytorch@10b22ea5 holds an unresolved merge of the same script. Release-tag
commits tried with read_file (v2.6.0-v2.9.0, as recalled, not verified here) were all refused
the same way. So the sources named per row stand.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudash.text import is_uint


@dataclass(frozen=True)
class TorchBuild:
    """One published torch release x CUDA variant and the architectures its kernels cover."""

    release: str  # "2.11"
    variant: str  # "cu128"
    arch_list: str  # TORCH_CUDA_ARCH_LIST, ";"-separated, "+PTX" marks PTX
    source: str

    @property
    def cuda(self) -> tuple[int, int]:
        digits = self.variant[2:]
        return int(digits[:-1]), int(digits[-1])


_B24 = (
    "pytorch/builder@release/2.4 (4ce1afeb2262808c1e9707b93682ac66acf2db2a) manywheel/build_cuda.sh"
)
_B25 = (
    "pytorch/builder@release/2.5 (aec5fb5de2380a9084f4bb430eec4e576066a17c) manywheel/build_cuda.sh"
)
# moi90/pytorch_compute_capabilities table.md: architectures found by cuobjdump in the conda
# packages of the same release (read from the search index excerpt, not the wheel script).
_MOI = "github.com/moi90/pytorch_compute_capabilities table.md (cuobjdump of release binaries)"
_P28 = (
    "pytorch/pytorch .ci/manywheel/build_cuda.sh @00c7a380b8369d08e02dd400aa76dc6c0738b589 "
    "(12.6/12.8/12.9 arms, sm_70 kept in 12.8 per pytorch/pytorch#157517); "
    "github.com/EutropicAI/vs-playground/pull/59 (2.8.0+cu128 has sm_70, 2.7.1+cu128 not)"
)
_M29 = "RELEASE.md 'For Release 2.9 and 2.10' CUDA matrix (pytorch/pytorch#164471, #175253 diff)"
_M211 = "RELEASE.md 'For Release 2.11' (pytorch/pytorch#175253); get_arch_list() in #182250"
_V211 = "get_arch_list() of 2.11.0+cu130 on the lent H200 (tests/fixtures/verify/h200-1x.json)"
_M212 = (
    "RELEASE.md 'For Release 2.12, 2.13 and 2.14' (pytorch/pytorch#182849, #187075, #194367); "
    "release wheels without PTX (#188925; 2.13.0 alone had 12.0+PTX)"
)
_M215 = (
    "pytorch/pytorch#190385 (RFC: 2.15 drops cu126, keeps 13.0 and 13.2), "
    "pytorch/pytorch#196249 and pytorch/test-infra#8739 (12.6 removed from CD); arch lists of "
    "13.0/13.2 as in 2.14 (the RFC keeps both unchanged)"
)

# Release wheels carry no PTX. "Restore the pre-2.13 behavior where release/RC CUDA wheels
# ship without +PTX, while nightlies keep it": the branch-cut `sed` in
# apply-release-changes.sh stripped +PTX until it silently stopped working, and "2.13.0
# (cu130) shipped 12.0+PTX in release wheels" (pytorch/pytorch#188925, the release/2.13
# cherry-pick of #188914, 2026-07-03). So RELEASE.md's "12.0+PTX" for 13.x describes the
# nightly build; the real 2.11.0+cu130 wheel prints sm_75..sm_120 and no compute_120
# (tests/fixtures/verify/h200-1x.json). The 13.x rows from 2.9 on carry no PTX, except that
# 2.13.0 exactly (not 2.13.1+) had 12.0+PTX: the table keys on X.Y, so a 2.13.0 wheel is
# judged without it (a cc above 12.0 is "unknown", never failed, on every row).
_CU13_RELEASE = "7.5;8.0;8.6;9.0;10.0;12.0"
_LEGACY = "5.0;6.0;7.0;7.5;8.0;8.6;9.0"
_CU118 = "3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0"
_CU128_VOLTA = "7.0;7.5;8.0;8.6;9.0;10.0;12.0"
_CU128 = "7.5;8.0;8.6;9.0;10.0;12.0"

TORCH_BUILDS: tuple[TorchBuild, ...] = (
    TorchBuild("2.4", "cu118", _CU118, _B24),  # base list + "3.7;9.0" for 11.8
    TorchBuild("2.4", "cu121", _LEGACY, _B24),  # base list + "9.0"
    TorchBuild("2.4", "cu124", _LEGACY, _B24),
    TorchBuild("2.5", "cu118", _CU118, _B25),
    TorchBuild("2.5", "cu121", _LEGACY, _B25),
    TorchBuild("2.5", "cu124", _LEGACY, _B25),
    TorchBuild("2.6", "cu118", _CU118, _MOI),  # RELEASE.md 2.6: CUDA 11.8, 12.4; exp. 12.6
    TorchBuild("2.6", "cu124", _LEGACY, _MOI),
    TorchBuild("2.6", "cu126", _LEGACY, _MOI),
    TorchBuild("2.7", "cu118", _CU118, _MOI),  # RELEASE.md 2.7: CUDA 11.8, 12.6; exp. 12.8
    TorchBuild("2.7", "cu126", _LEGACY, _MOI),
    # sm_70 dropped from cu128 before the 2.7 cut: pytorch/pytorch#147607 (merged 2025-03-05)
    TorchBuild("2.7", "cu128", _CU128, _MOI + "; pytorch/pytorch#147607"),
    TorchBuild("2.8", "cu126", _LEGACY, _P28),
    TorchBuild("2.8", "cu128", _CU128_VOLTA, _P28),
    TorchBuild("2.8", "cu129", "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX", _P28),
    TorchBuild("2.9", "cu126", _LEGACY, _M29),
    TorchBuild("2.9", "cu128", _CU128_VOLTA, _M29),
    TorchBuild("2.9", "cu130", _CU13_RELEASE, f"{_M29}; release wheels without PTX: #188925"),
    TorchBuild("2.10", "cu126", _LEGACY, _M29),
    TorchBuild("2.10", "cu128", _CU128_VOLTA, _M29 + "; get_arch_list() in #182250"),
    TorchBuild("2.10", "cu130", _CU13_RELEASE, f"{_M29}; release wheels without PTX: #188925"),
    # cu126 and cu128 as printed by the real wheels in pytorch/pytorch#182250
    # (tests/fixtures/public/torch-arch-lists-pytorch-182250.txt)
    TorchBuild("2.11", "cu126", _LEGACY, _M211),
    TorchBuild("2.11", "cu128", _CU128, _M211),  # Volta dropped: pytorch/pytorch#172352
    TorchBuild("2.11", "cu130", _CU13_RELEASE, f"{_V211}; {_M211}"),
    TorchBuild("2.12", "cu126", _LEGACY, _M212),  # cu128 removed: pytorch/pytorch#178665
    TorchBuild("2.12", "cu130", _CU13_RELEASE, _M212),
    TorchBuild("2.12", "cu132", _CU13_RELEASE, _M212),
    TorchBuild("2.13", "cu126", _LEGACY, _M212),
    TorchBuild("2.13", "cu130", _CU13_RELEASE, _M212),
    TorchBuild("2.13", "cu132", _CU13_RELEASE, _M212),
    TorchBuild("2.14", "cu126", _LEGACY, _M212),
    TorchBuild("2.14", "cu130", _CU13_RELEASE, _M212),
    TorchBuild("2.14", "cu132", _CU13_RELEASE, _M212),
    TorchBuild("2.15", "cu130", _CU13_RELEASE, _M215),
    TorchBuild("2.15", "cu132", _CU13_RELEASE, _M215),
)


def release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split(".") if is_uint(p))


def releases() -> list[str]:
    """Every release in the table, newest first."""
    return sorted({b.release for b in TORCH_BUILDS}, key=release_key, reverse=True)


def builds_of(release: str) -> list[TorchBuild]:
    """The variants of one release, newest CUDA first."""
    return sorted(
        (b for b in TORCH_BUILDS if b.release == release), key=lambda b: b.cuda, reverse=True
    )


def find(release: str, variant: str) -> TorchBuild | None:
    """The build of `release` (2.11 or 2.11.0) and `variant` (cu128), None if not in the table."""
    short = ".".join(release.split(".")[:2])
    return next((b for b in TORCH_BUILDS if b.release == short and b.variant == variant), None)
