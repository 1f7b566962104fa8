"""Wheels vs hardware: does each venv's torch (and FlashInfer) fit this driver and these GPUs?

A torch wheel carries its own CUDA runtime (`+cu130` = CUDA 13.0), so the driver must be able
to run that CUDA (natively, or through minor-version compatibility), and the CUDA release must
be able to target the GPU's architecture at all: a cu126 build has no Blackwell kernels, a
cu130 build no Volta ones (gpudash.checks.cuda).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudash.checks.context import Context
from gpudash.checks.cuda import can_run, can_target, cc_tuple, driver_cuda, min_driver_for
from gpudash.checks.finding import Fact, Finding, Severity
from gpudash.checks.versions import Version, local_cuda, parse_version, short

FLASHINFER = ("flashinfer-python", "flashinfer", "flashinfer-jit-cache", "flashinfer-cubin")
if TYPE_CHECKING:
    from gpudash.probe.sections.env import Venv


def check(ctx: Context) -> list[Finding]:
    if ctx.env is None:
        return []
    out: list[Finding] = []
    with_torch = [v for v in ctx.venvs if "torch" in v.packages]
    if not with_torch:
        return [
            Finding(
                Severity.FAIL,
                "wheels.no_torch",
                "no torch in any venv"
                + (f" ({len(ctx.venvs)} venvs looked at)" if ctx.venvs else " (no venv found)"),
                why="SGLang and vLLM run on PyTorch: nothing can serve until a CUDA torch is in.",
                fix="Install torch built for the driver's CUDA into the serving venv.",
                facts={"venvs": [v.path for v in ctx.venvs]},
                fix_task="torch",
            )
        ]
    driver = ctx.driver
    native, source = driver_cuda(ctx.driver_version, ctx.reported_cuda)
    ccs = _ccs(ctx)
    for venv in with_torch:
        version = venv.packages["torch"]
        cuda = parse_version(venv.torch_cuda) if venv.torch_cuda else None
        facts: dict[str, Fact] = {
            "venv": venv.path,
            "torch": version,
            "torch_cuda": venv.torch_cuda,
            "driver": ctx.driver_version,
            "driver_cuda": short(native) if native else None,
        }
        if cuda is None:
            out.append(
                Finding(
                    Severity.WARN,
                    "wheels.torch_cpu_build",
                    f"torch {version} in {venv.path} is a CPU-only build",
                    why="A CPU build of torch cannot use the GPUs; serving engines refuse it.",
                    fix="Reinstall torch from the PyTorch index for the driver's CUDA (cu1XY).",
                    facts=facts,
                    fix_task="torch",
                )
            )
            continue
        if ctx.gpus is not None and (driver is not None or native is not None):
            verdict = can_run(cuda, driver, native)
            if verdict == "no":
                minimum = min_driver_for(cuda)
                out.append(
                    Finding(
                        Severity.FAIL,
                        "wheels.torch_cuda_too_new",
                        f"torch {version} in {venv.path} is built for CUDA {venv.torch_cuda}; "
                        f"driver {ctx.driver_version} supports CUDA "
                        f"{short(native) if native else '?'}",
                        why=(
                            "torch.cuda.is_available() is False on this driver "
                            '("The NVIDIA driver on your system is too old"): no GPU work runs.'
                        ),
                        fix=(
                            "Reinstall torch built for a CUDA the driver supports "
                            f"(cu{''.join(map(str, native)) if native else '?'}), or upgrade "
                            f"the driver to >= {minimum or '?'}."
                        ),
                        facts={**facts, "driver_cuda_from": source},
                        fix_task="torch",
                    )
                )
            elif verdict == "minor":
                out.append(
                    Finding(
                        Severity.INFO,
                        "wheels.torch_minor_compat",
                        f"torch {version} (CUDA {venv.torch_cuda}) runs on driver "
                        f"{ctx.driver_version} (CUDA {short(native) if native else '?'}) "
                        "through minor-version compatibility",
                        why="Prebuilt kernels run; features needing a newer driver (and PTX "
                        "JIT of newer PTX) do not.",
                        fix="Prefer a torch build matching the driver's CUDA.",
                        facts=facts,
                        fix_task="torch",
                    )
                )
        out.extend(_arch(ctx, ccs, "torch", version, cuda, venv.path, "torch"))
        out.extend(_flashinfer(ctx, ccs, venv))
    if not out:
        names = ", ".join(f"torch {v.packages['torch']} in {v.path}" for v in with_torch)
        out.append(Finding(Severity.OK, "wheels.ok", f"{names} fit the driver and GPUs"))
    return out


def _ccs(ctx: Context) -> dict[tuple[int, int], list[int]]:
    """Compute capability -> GPU indices having it."""
    out: dict[tuple[int, int], list[int]] = {}
    for gpu in ctx.gpu_list:
        cc = cc_tuple(gpu.cc)
        if cc is not None:
            out.setdefault(cc, []).append(gpu.index)
    return out


def _arch(
    ctx: Context,
    ccs: dict[tuple[int, int], list[int]],
    what: str,
    version: str,
    cuda: Version,
    venv: str,
    task: str | None,
) -> list[Finding]:
    out = []
    for cc, indices in ccs.items():
        ok, reason = can_target(cuda, cc)
        if ok is False:
            sm = f"sm_{cc[0]}{cc[1]}"
            out.append(
                Finding(
                    Severity.FAIL,
                    f"wheels.{what.replace('-', '_')}_cannot_target_gpu",
                    f"{what} {version} in {venv} (CUDA {short(cuda)}) has no kernels for "
                    f"{sm}: {reason}",
                    why=(
                        f'Kernels fail with "no kernel image is available for execution on '
                        f'the device" on GPU {", ".join(map(str, indices))}.'
                    ),
                    fix=f"Install a {what} build for a CUDA release that targets {sm}.",
                    facts={
                        "venv": venv,
                        what: version,
                        "cuda": short(cuda),
                        "cc": f"{cc[0]}.{cc[1]}",
                        "gpus": indices,
                    },
                    fix_task=task,
                )
            )
    return out


def _flashinfer(ctx: Context, ccs: dict[tuple[int, int], list[int]], venv: Venv) -> list[Finding]:
    out: list[Finding] = []
    for name in FLASHINFER:
        version = venv.packages.get(name)
        if version is None:
            continue
        cuda = local_cuda(version)
        if cuda is None and name == "flashinfer-python" and ctx.toolkit is not None:
            # The JIT package compiles kernels on the host with the nvcc on PATH.
            nvcc = next((parse_version(n.release) for n in ctx.toolkit.nvcc if n.release), None)
            if nvcc is not None:
                found = _arch(ctx, ccs, "flashinfer", version, nvcc[:2], venv.path, "serving")
                for f in found:
                    out.append(
                        Finding(
                            f.severity,
                            "wheels.flashinfer_cannot_target_gpu",
                            f.title + f" (its JIT uses nvcc {short(nvcc)})",
                            f.why,
                            "Put an nvcc that targets this GPU first on PATH (or CUDA_HOME).",
                            {**f.facts, "jit_nvcc": short(nvcc)},
                        )
                    )
            continue
        if cuda is not None:
            found = _arch(ctx, ccs, "flashinfer", version, cuda, venv.path, "serving")
            out.extend(found)
    return out
