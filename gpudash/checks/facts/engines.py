"""Architectures the serving engines' wheels carry kernels for, read from their repositories.

FlashInfer: `.github/workflows/release.yml` FLASHINFER_CUDA_ARCH_LIST at each tag (the
flashinfer-jit-cache wheels; flashinfer-python JIT-compiles but refuses below sm_75 too).
sgl-kernel and vLLM could not be read at release tags here (their snapshots are over the size
limit and the index holds one version of each file): the rows cite the commit that was read.
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
    "sgl-kernel": (8, 0),  # @00390b86, x86_64
    "vllm": (7, 0),  # @000a1ee9: 7.0 only in builds with CUDA < 12.8, 7.5 from 12.8
}
