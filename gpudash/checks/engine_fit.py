"""Does an installed engine wheel (FlashInfer, sgl-kernel, vLLM) have kernels for these GPUs?

Pure verdicts from gpudash.checks.facts.engines (each engine's arch lists, read at release
tags where the sources could be read) and the binary-compatibility rule in
gpudash.checks.stack. Below an engine's floor is a fail; a cc its wheel's CUDA cannot build
is a fail for FlashInfer (no cubins, and its JIT would use that CUDA).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpudash.checks.cuda import can_target
from gpudash.checks.facts.binary_compat import parse_arch_list
from gpudash.checks.facts.engines import ENGINE_BUILDS, ENGINE_FLOOR, EngineBuild, floor_of
from gpudash.checks.stack import FAIL, WARN, GpuFit, Verdict, _cc, _gpu_reason, _worst, gpu_fit


def _flashinfer_blind(fits: list[GpuFit], cuda: tuple[int, int]) -> tuple[list[GpuFit], str]:
    """A FlashInfer wheel built with CUDA X holds no kernels for a cc X cannot compile, and its
    JIT fallback compiles with that same CUDA: a cu124 wheel cannot serve sm_100 (CUDA 12.8
    added sm_100: toolkit release notes, gpudash.checks.cuda.MIN_CUDA_FOR_CC). Its PTX of an
    older major is no way in either: FlashInfer dispatches per SM and loads only its own
    cubins."""
    out, why = [], []
    for f in fits:
        cc = _cc(f.cc)
        ok, reason = can_target(cuda, cc) if cc is not None else (None, "")
        if ok is False:
            out.append(GpuFit(f.cc, "none", ""))
            why.append(
                f"built with CUDA {cuda[0]}.{cuda[1]}, it has no sm_{f.cc.replace('.', '')} "
                f"kernels and that CUDA cannot build them ({reason})"
            )
        else:
            out.append(f)
    return out, "; ".join(dict.fromkeys(why))


def _lowest(row: EngineBuild) -> tuple[int, int]:
    return min((t.cc for t in parse_arch_list(row.arch_list)), default=(0, 0))


def engine_runs_here(
    package: str, version: str | None, cuda: tuple[int, int] | None, ccs: Sequence[str | None]
) -> Verdict:
    """Whether an installed engine wheel (flashinfer, sgl-kernel, vllm) has kernels for `ccs`.

    Below the engine's floor is a FAIL; a cc covered only by JIT (flashinfer compiles at run
    time) or by a row not read at the installed version is a WARN saying so.
    """
    if package not in ENGINE_FLOOR:
        return Verdict(WARN, "unknown", "", (), f"{package} is not in gpudash's facts")
    floor, known_from, floor_source = floor_of(package, version)
    series = ".".join((version or "").split(".")[:2])
    rows = [r for r in ENGINE_BUILDS if r.package == package and r.versions == series] or [
        r for r in ENGINE_BUILDS if r.package == package
    ]
    row = next(
        (r for r in rows if cuda is not None and r.cuda_below and cuda < r.cuda_below), rows[-1]
    )
    fits = []
    for text in ccs:
        cc = _cc(text)
        if cc is not None and cc < floor:
            fits.append(GpuFit(text or "", "none", ""))
        elif cc is not None and cc < known_from:  # between two releases' stated floors
            fits.append(GpuFit(text or "", "unknown", ""))
        else:
            fit = gpu_fit(row.arch_list, text)
            if fit.how == "none" and floor_source and cc is not None and cc < _lowest(row):
                # The arch-list row was read at another commit; this release's own docs put
                # its floor at or below this cc, and no row read says otherwise for it.
                fit = GpuFit(text or "", "stated", "")
            fits.append(fit)
    label = f"{package} {version or ''}".strip()
    reason = _gpu_reason(label, fits)
    blind = ""
    if package == "flashinfer" and cuda is not None:
        fits, blind = _flashinfer_blind(fits, cuda)
        reason = blind or reason
    below = [f.cc for f in fits if f.how == "none" and (_cc(f.cc) or (99, 0)) < floor]
    if below:
        reason = (
            f"{package} needs compute capability >= {floor[0]}.{floor[1]}; GPU cc "
            f"{', '.join(below)} is below it" + (f" ({floor_source})" if floor_source else "")
        )
    between = [f.cc for f in fits if f.how == "unknown" and (_cc(f.cc) or (99, 0)) < known_from]
    if between and not below:
        reason = (
            f"whether {label} runs on cc {', '.join(between)} is unknown: its floor is "
            f"{floor[0]}.{floor[1]} or {known_from[0]}.{known_from[1]} ({floor_source})"
        )
    sev = _worst([f.severity for f in fits])
    if package == "flashinfer" and sev == FAIL and not below and not blind:
        sev = WARN  # flashinfer-python JIT-compiles for GPUs its cache lacks
    return Verdict(sev, "unknown", "", tuple(fits), reason)
