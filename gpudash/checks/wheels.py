"""Wheels vs hardware: does each venv's torch (and FlashInfer, sgl-kernel, vLLM) run here?

A torch wheel carries its own CUDA runtime (`+cu130` = CUDA 13.0), so two things must hold,
and a finding says which one fails: the driver runs that CUDA (natively or through
minor-version compatibility), and the build's published arch list has kernels every GPU can
execute (SASS for its cc, SASS of a lower minor of the same major, or PTX to JIT). Both are
read from gpudash.checks.facts (PyTorch's build matrix, NVIDIA's tables) by
gpudash.checks.stack; a build or a GPU the facts do not know is said to be unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpudash.checks.context import Context
from gpudash.checks.cuda import can_target
from gpudash.checks.engine_fit import engine_runs_here
from gpudash.checks.facts import FACTS_DATE
from gpudash.checks.facts.torch_builds import find
from gpudash.checks.finding import Fact, Finding, Severity
from gpudash.checks.stack import (
    GpuFit,
    driver_path,
    gpu_fit,
    min_driver,
    suggest_fix,
)
from gpudash.text import is_uint
from gpudash.versions import local_cuda, parse_version, short

FLASHINFER = ("flashinfer-python", "flashinfer", "flashinfer-jit-cache", "flashinfer-cubin")
ENGINES = {name: "flashinfer" for name in FLASHINFER} | {"sgl-kernel": "sgl-kernel", "vllm": "vllm"}
if TYPE_CHECKING:
    from gpudash.probe.sections.env import Venv

_NO_KERNEL = 'Kernels fail with "no kernel image is available for execution on the device"'


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
    for venv in with_torch:
        out.extend(_torch(ctx, venv))
        if ctx.gpus is not None:
            out.extend(_engines(ctx, venv))
    if not out:
        names = ", ".join(f"torch {v.packages['torch']} in {v.path}" for v in with_torch)
        out.append(Finding(Severity.OK, "wheels.ok", f"{names} fit the driver and GPUs"))
    return out


def _ccs(ctx: Context) -> dict[str, list[int]]:
    """Compute capability -> GPU indices having it (GPUs without one: gpus.no_cc says so)."""
    out: dict[str, list[int]] = {}
    for gpu in ctx.gpu_list:
        if gpu.cc:
            out.setdefault(gpu.cc, []).append(gpu.index)
    return out


def _torch(ctx: Context, venv: Venv) -> list[Finding]:
    version = venv.packages["torch"]
    cuda = parse_version(venv.torch_cuda) if venv.torch_cuda else None
    facts: dict[str, Fact] = {
        "venv": venv.path,
        "torch": version,
        "torch_cuda": venv.torch_cuda,
        "driver": ctx.driver_version,
        "driver_cuda": ctx.reported_cuda,
        "facts_date": FACTS_DATE,
    }
    if cuda is None:
        return [
            Finding(
                Severity.WARN,
                "wheels.torch_cpu_build",
                f"torch {version} in {venv.path} is a CPU-only build",
                why="A CPU build of torch cannot use the GPUs; serving engines refuse it.",
                fix="Reinstall torch from the PyTorch index for the driver's CUDA (cu1XY).",
                facts=facts,
                fix_task="torch",
            )
        ]
    if ctx.gpus is None or not ctx.gpu_list:
        return []
    cuda2 = (cuda[0], cuda[1] if len(cuda) > 1 else 0)
    variant = f"cu{cuda2[0]}{cuda2[1]}"
    release = ".".join(version.split("+")[0].split(".")[:2])
    build = find(release, variant)
    ccs = [g.cc for g in ctx.gpu_list if g.cc]
    out: list[Finding] = []
    path, why = driver_path(cuda2, ctx.driver_version, ctx.reported_cuda)
    if build is not None:
        fix = suggest_fix(ctx.driver_version, ccs, build, ctx.reported_cuda)
    else:
        fix = "use the torch gpudash picks (`gpudash run torch HOST --show`)"
    if path == "none":
        out.append(
            Finding(
                Severity.FAIL,
                "wheels.torch_cuda_too_new",
                f"torch {version} in {venv.path} is built for CUDA {venv.torch_cuda}: "
                f"the driver fails ({why})",
                why=(
                    "torch.cuda.is_available() is False on this driver "
                    '("The NVIDIA driver on your system is too old"): no GPU work runs.'
                ),
                fix=f"{_cap(fix)}; or upgrade the driver to >= {min_driver(cuda2) or '?'}.",
                facts={**facts, "driver_path": path},
                fix_task="torch",
            )
        )
    elif path == "mvc":
        out.append(
            Finding(
                Severity.INFO,
                "wheels.torch_minor_compat",
                f"torch {version} (CUDA {venv.torch_cuda}) runs on driver "
                f"{ctx.driver_version} through minor-version compatibility",
                why=f"{why}: prebuilt kernels run; PTX JIT of newer PTX does not.",
                fix="Prefer a torch build the driver runs natively.",
                facts={**facts, "driver_path": path},
                fix_task="torch",
            )
        )
    if build is None:
        out.extend(_unknown_build(ctx, version, variant, cuda2, venv.path, facts))
        return out
    fits = {cc: gpu_fit(build.arch_list, cc, mvc=path == "mvc") for cc in _ccs(ctx)}
    out.extend(
        _arch_findings(
            "torch",
            "torch",
            f"torch {version}",
            venv.path,
            build.arch_list,
            fits,
            _ccs(ctx),
            fix,
            {**facts, "arch_list": build.arch_list, "source": build.source},
        )
    )
    return out


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _unknown_build(
    ctx: Context,
    version: str,
    variant: str,
    cuda: tuple[int, int],
    venv: str,
    facts: dict[str, Fact],
) -> list[Finding]:
    """A torch build outside PyTorch's published matrix as gpudash read it (a nightly, a source
    build, a release newer than the facts): its arch list is unknown. What is still known is
    that a CUDA release cannot compile SASS for a cc it does not know (toolkit release notes),
    so on such a GPU only PTX could run it."""
    blind, dropped = [], []
    for cc, indices in _ccs(ctx).items():
        cc_t = parse_version(cc)
        if cc_t is None or len(cc_t) < 2:
            continue
        ok, reason = can_target(cuda, (cc_t[0], cc_t[1]))
        where = f"sm_{cc_t[0]}{cc_t[1]} (GPU {', '.join(map(str, indices))})"
        if ok is False and "no longer targets" in reason:
            # Below the toolkit's floor there is neither SASS nor PTX old enough to JIT: the
            # lowest PTX such a CUDA emits is for its floor, above this GPU (CUDA 13: sm_75).
            dropped.append(f"{where}: {reason}")
        elif ok is False:
            blind.append(where)
    if dropped:
        return [
            Finding(
                Severity.FAIL,
                "wheels.torch_cannot_target_gpu",
                f"torch {version} ({variant}) in {venv} cannot run on "
                f"{'; '.join(dropped)}: no kernels and no PTX it could JIT",
                why=f"{_NO_KERNEL}; whatever its arch list (not in gpudash's facts of "
                f"{FACTS_DATE}), a CUDA {short(cuda)} build has nothing for this GPU.",
                fix="Install a torch built with a CUDA that still targets this GPU "
                "(the one gpudash picks: `gpudash run torch HOST --show`).",
                facts=facts,
                fix_task="torch",
            )
        ]
    title = (
        f"torch {version} ({variant}) in {venv} is not in gpudash's facts (of {FACTS_DATE}): "
        "which GPUs it has kernels for is unknown"
    )
    if blind:
        title += f"; CUDA {short(cuda)} cannot compile {', '.join(blind)}, only PTX could run"
    return [
        Finding(
            Severity.WARN if blind else Severity.INFO,
            "wheels.torch_build_unknown",
            title,
            why="gpudash knows the arch lists of PyTorch's published release wheels only.",
            fix="Run `python -c 'import torch; print(torch.cuda.get_arch_list())'` in the venv, "
            "or install the torch gpudash picks.",
            facts=facts,
            fix_task="torch" if blind else None,
        )
    ]


def _arch_findings(
    what: str,
    code: str,
    label: str,
    venv: str,
    arch_list: str,
    fits: dict[str, GpuFit],
    indices: dict[str, list[int]],
    fix: str,
    facts: dict[str, Fact],
    task: str | None = "torch",
) -> list[Finding]:
    """One finding per cc whose fit is not clean SASS: none (FAIL), PTX only, unknown cc."""
    out = []
    for cc, fit in fits.items():
        gpus = ", ".join(map(str, indices.get(cc, [])))
        sm = f"sm_{cc.replace('.', '')}"
        f_facts = {**facts, "cc": cc, "gpus": indices.get(cc, []), "how": fit.how}
        if fit.how == "none":
            out.append(
                Finding(
                    Severity.FAIL,
                    f"wheels.{code}_cannot_target_gpu",
                    f"{label} in {venv} has no {sm} kernels: the arch fails "
                    f"(its arch list: {arch_list or '?'})",
                    why=f"{_NO_KERNEL} on GPU {gpus}.",
                    fix=_cap(fix) + ".",
                    facts=f_facts,
                    fix_task=task,
                )
            )
        elif fit.how == "ptx":
            out.append(
                Finding(
                    Severity.WARN,
                    f"wheels.{code}_ptx_only",
                    f"{label} in {venv} reaches {sm} only by JIT from {fit.matched} PTX",
                    why="The driver compiles every kernel at first use (minutes of start-up, "
                    "cached per user); some kernels may be slower than native SASS.",
                    fix=_cap(fix) + ".",
                    facts=f_facts,
                    fix_task=task,
                )
            )
        elif fit.how == "unknown":
            out.append(
                Finding(
                    Severity.WARN,
                    "wheels.gpu_unknown_to_facts",
                    f"cc {cc} (GPU {gpus}) is unknown to this gpudash (facts of {FACTS_DATE}): "
                    f"cannot tell whether {label} runs on it",
                    why="The GPU is newer than the tables gpudash's verdicts come from.",
                    fix="Update gpudash, or check `torch.cuda.get_arch_list()` by hand.",
                    facts=f_facts,
                )
            )
    return out


def _engine_cuda(name: str, version: str, venv: Venv) -> tuple[int, int] | None:
    cuda = local_cuda(version)
    if cuda is None and name in ("sgl-kernel", "vllm") and venv.torch_cuda:
        # PyPI's untagged sgl-kernel and vllm wheels are built against the torch they pin,
        # whose CUDA is the venv's torch's.
        parsed = parse_version(venv.torch_cuda)
        cuda = (parsed[0], parsed[1]) if parsed and len(parsed) >= 2 else None
    return (cuda[0], cuda[1]) if cuda else None


def _engines(ctx: Context, venv: Venv) -> list[Finding]:
    out: list[Finding] = []
    indices = _ccs(ctx)
    for name, package in ENGINES.items():
        version = venv.packages.get(name)
        if version is None or not indices:
            continue
        code = package.replace("-", "_")
        label = f"{name} {version}"
        cuda = _engine_cuda(name, version, venv)
        facts: dict[str, Fact] = {"venv": venv.path, name: version, "facts_date": FACTS_DATE}
        if name == "flashinfer-python" and cuda is None:
            out.extend(_flashinfer_jit(ctx, venv, version, indices, facts))
            continue
        verdict = engine_runs_here(package, version, cuda, list(indices))
        fits = {f.cc: _compiled(f, cuda) for f in verdict.gpus}
        if verdict.reason and "needs compute capability" in verdict.reason:
            below = [cc for cc, f in fits.items() if f.how == "none"]
            out.append(_below_floor(name, version, venv.path, code, verdict.reason, below, facts))
            fits = {cc: f for cc, f in fits.items() if cc not in below}
        fix = f"install a {name} wheel built for these GPUs (CUDA {short(cuda) if cuda else '?'})"
        out.extend(
            _arch_findings(
                name, code, label, venv.path, "", fits, indices, fix, facts, task="serving"
            )
        )
    return out


def _compiled(fit: GpuFit, cuda: tuple[int, int] | None) -> GpuFit:
    """A wheel built with CUDA X.y holds no SASS for a target its nvcc cannot compile (toolkit
    release notes: sm_100 needs 12.8, sm_103 12.9): an arch list row read at another CUDA does
    not carry over to it."""
    if cuda is None or fit.how not in ("sass", "sass_compat"):
        return fit
    digits = fit.matched.removeprefix("sm_").rstrip("af")
    cc = (int(digits[:-1]), int(digits[-1])) if is_uint(digits) and len(digits) >= 2 else None
    if cc is not None and can_target(cuda, cc)[0] is False:
        return GpuFit(fit.cc, "none", "")
    return fit


def _below_floor(
    name: str, version: str, venv: str, code: str, reason: str, below: Sequence[str], facts: dict
) -> Finding:
    return Finding(
        Severity.FAIL,
        f"wheels.{code}_cannot_target_gpu",
        f"{name} {version} in {venv}: {reason}",
        why=f"{name} refuses (or has no kernels for) GPUs below its floor: the arch fails.",
        fix=f"Serve on these GPUs without {name} (e.g. another attention backend), or use "
        "newer GPUs.",
        facts={**facts, "ccs": list(below)},
        fix_task=None,
    )


def _flashinfer_jit(
    ctx: Context, venv: Venv, version: str, indices: dict[str, list[int]], facts: dict
) -> list[Finding]:
    """flashinfer-python compiles its kernels on the host with the nvcc on PATH: its floor
    (sm_75) and what that nvcc can target decide."""
    verdict = engine_runs_here("flashinfer", version, None, list(indices))
    out: list[Finding] = []
    below = [f.cc for f in verdict.gpus if f.how == "none"]
    if verdict.reason and "needs compute capability" in verdict.reason:
        out.append(
            _below_floor(
                "flashinfer-python", version, venv.path, "flashinfer", verdict.reason, below, facts
            )
        )
    if ctx.toolkit is None:
        return out
    nvcc = next((parse_version(n.release) for n in ctx.toolkit.nvcc if n.release), None)
    if nvcc is None:
        return out
    for cc, gpus in indices.items():
        cc_t = parse_version(cc)
        if cc in below or cc_t is None or len(cc_t) < 2:
            continue
        ok, reason = can_target(nvcc[:2], (cc_t[0], cc_t[1]))
        if ok is False:
            sm = f"sm_{cc_t[0]}{cc_t[1]}"
            out.append(
                Finding(
                    Severity.FAIL,
                    "wheels.flashinfer_cannot_target_gpu",
                    f"flashinfer-python {version} in {venv.path} cannot build {sm} kernels: "
                    f"{reason} (its JIT uses nvcc {short(nvcc)})",
                    why=f"{_NO_KERNEL} on GPU {', '.join(map(str, gpus))}.",
                    fix="Put an nvcc that targets this GPU first on PATH (or CUDA_HOME).",
                    facts={**facts, "cc": cc, "gpus": gpus, "jit_nvcc": short(nvcc)},
                )
            )
    return out
