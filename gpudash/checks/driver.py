"""Driver vs toolkit: can this driver run what each installed nvcc builds?

A CUDA X.y toolkit's binaries run natively on a driver that supports CUDA X.y or newer, and
through minor-version compatibility on any driver of at least the X family minimum (see
gpudash.checks.facts.cuda_driver, read through gpudash.checks.stack.driver_path) — except
that PTX from a newer toolkit cannot be JIT-compiled by an
older driver, which is exactly what JIT kernel libraries (FlashInfer, Triton extensions,
torch cpp_extension builds) rely on.
"""

from __future__ import annotations

from gpudash.checks.context import Context
from gpudash.checks.cuda import driver_cuda
from gpudash.checks.finding import Finding, Severity
from gpudash.checks.stack import driver_path, min_driver
from gpudash.versions import parse_version, short


def check(ctx: Context) -> list[Finding]:
    toolkit = ctx.toolkit
    if toolkit is None or not toolkit.nvcc:
        return []
    driver = ctx.driver
    native, source = driver_cuda(ctx.driver_version, ctx.reported_cuda)
    if driver is None and native is None:
        return []
    out: list[Finding] = []
    seen: set[str] = set()
    for nvcc in toolkit.nvcc:
        release = parse_version(nvcc.release)
        if release is None or nvcc.release is None or nvcc.release in seen:
            continue
        seen.add(nvcc.release)
        paths = [n.path for n in toolkit.nvcc if n.release == nvcc.release]
        facts = {
            "nvcc": nvcc.version or nvcc.release,
            "paths": paths,
            "driver": ctx.driver_version,
            "driver_cuda": short(native) if native else None,
            "driver_cuda_from": source,
        }
        cuda = (release[0], release[1] if len(release) > 1 else 0)
        path, _ = driver_path(cuda, ctx.driver_version, ctx.reported_cuda)
        verdict = {"native": "native", "mvc": "minor", "none": "no"}.get(path, "unknown")
        supports = f"CUDA {short(native)}" if native else "an unknown CUDA"
        if verdict == "no":
            minimum = min_driver(cuda)
            need = f">= {minimum}" if minimum else f"supporting CUDA {nvcc.release}"
            out.append(
                Finding(
                    Severity.FAIL,
                    "driver.too_old_for_nvcc",
                    f"nvcc {nvcc.release} needs driver {need}; driver {ctx.driver_version} "
                    f"supports {supports}",
                    why=(
                        "Anything this nvcc builds (JIT kernels, CUDA extensions, source "
                        "builds of FlashInfer or vLLM) fails to load with "
                        '"the provided PTX was compiled with an unsupported toolchain" or '
                        '"CUDA driver version is insufficient".'
                    ),
                    fix=(
                        f"Upgrade the NVIDIA driver to {need}, or put a toolkit no newer than "
                        f"CUDA {short(native) if native else '?'} first on PATH."
                    ),
                    facts={**facts, "min_driver": minimum},
                )
            )
        elif verdict == "minor":
            out.append(
                Finding(
                    Severity.WARN,
                    "driver.nvcc_minor_compat",
                    f"nvcc {nvcc.release} is newer than driver {ctx.driver_version} "
                    f"({supports}): runs only through minor-version compatibility",
                    why=(
                        "Binaries built by it run, but PTX it emits cannot be JIT-compiled "
                        "by this driver (cudaErrorUnsupportedPtxVersion), which breaks JIT "
                        "kernels that ship PTX."
                    ),
                    fix=(
                        f"Use a CUDA {short(native) if native else ''} toolkit for builds, or "
                        "upgrade the driver to one that supports "
                        f"CUDA {nvcc.release}."
                    ),
                    facts=facts,
                )
            )
    if not out:
        releases = ", ".join(sorted(seen))
        out.append(
            Finding(
                Severity.OK,
                "driver.ok",
                f"driver {ctx.driver_version} supports every nvcc ({releases})",
                facts={"driver": ctx.driver_version, "nvcc": sorted(seen)},
            )
        )
    return out
