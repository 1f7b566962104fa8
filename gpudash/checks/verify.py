"""Findings from the verify task's result: proven on the GPUs, not inferred from versions.

Pure functions of a parsed `VerifyResult` (gpudash.probe.verify) and a few probe facts passed
in (the GPUs the probe saw, whether every GPU pair is on NVLink, the driver and torch now).
Each finding that re-running verify can confirm or clear carries `fix_task="verify"` (key
`V`). A result that could not be read says so; it never counts as ok.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, Any

from gpudash.checks.finding import Finding, Severity
from gpudash.checks.verify_expect import (
    BUSBW,
    COPY_FLOOR,
    FAIL_FRACTION,
    LINK_FLOOR,
    MATMUL_FLOOR,
    pcie_gbps,
    peak_for,
)
from gpudash.probe.sections.verify import VerifySection
from gpudash.probe.verify import VerifyGpu, VerifyResult

if TYPE_CHECKING:
    from gpudash.checks.context import Context

TASK = "verify"
SLOW_WARN = 0.15
"""A GPU this far below the median of its peers on the host is a WARN..."""
SLOW_FAIL = 0.30
"""...and this far below, a FAIL."""
_RERUN = "Re-run verify (V) after fixing it to confirm."


@dataclass(frozen=True)
class Now:
    """The probe's facts the result is judged against (each None when not known)."""

    gpus: int | None = None  # GPUs the probe saw (NVML / nvidia-smi)
    nvlink_all: bool | None = None  # every GPU pair on NVLink / NVSwitch
    driver: str | None = None  # the driver now
    torch: str | None = None  # torch in the serving venv now ("2.11.0", or with +cu130)
    torch_cuda: str | None = None  # that torch's CUDA build ("13.0"), where the probe read it
    time: float | None = None  # Unix time now, on the host's clock where known


def _f(
    severity: Severity, code: str, title: str, why: str, fix: str, task: str = TASK, **facts: Any
) -> Finding:
    """A verify finding; `task` is the task that fixes it (verify itself where re-running is
    what helps, torch or serving where a reinstall is the fix)."""
    return Finding(severity, f"verify.{code}", title, why, fix, facts, fix_task=task)


def check(ctx: Context) -> list[Finding]:
    """The family entry: the host's verify section judged against its other sections.

    Nothing when the verify section was not probed (a saved probe from an older gpudash):
    only a probe that looked for the result may say that verify never ran."""
    section = ctx.result.data("verify")
    if not isinstance(section, VerifySection) or not section.looked:
        return []
    return judge(section.result, now_of(ctx, section))


def now_of(ctx: Context, section: VerifySection) -> Now:
    """The probe's facts a result is judged against: the GPUs the driver lists, whether every
    pair is on NVLink, the driver, and torch in the venv the result was measured in."""
    torch = torch_cuda = None
    result = section.result
    if result is not None and result.executable:
        venv = posixpath.dirname(posixpath.dirname(result.executable))
        found = next((v for v in ctx.venvs if v.path == venv), None)
        if found is not None:
            torch, torch_cuda = found.packages.get("torch"), found.torch_cuda
    topology = ctx.topology
    return Now(
        gpus=len(ctx.gpu_list) if ctx.gpus is not None and ctx.gpus.source != "none" else None,
        nvlink_all=topology.all_nvlink if topology is not None and topology.matrix else None,
        driver=ctx.driver_version,
        torch=torch,
        torch_cuda=torch_cuda,
        time=section.host_now,
    )


def judge(result: VerifyResult | None, now: Now | None = None) -> list[Finding]:
    """Every verify finding for one host's last result (None: verify never ran there)."""
    now = now or Now()
    if result is None:
        return [
            _f(
                Severity.INFO,
                "not_run",
                "verify has not run here: the stack and GPU speed are inferred, not proven",
                "Versions matching tables do not prove that kernels run or that GPUs perform.",
                "Run verify (V): a bf16 matmul, copies and an all-reduce on every GPU (~30 s).",
            )
        ]
    if result.status == "unknown":
        notes = "; ".join(result.notes) or "unreadable"
        return [
            _f(
                Severity.WARN,
                "unreadable",
                f"the last verify result could not be read ({notes})",
                "Nothing it says can be trusted, so nothing is proven.",
                "Run verify (V) again.",
                notes=list(result.notes),
            )
        ]
    out: list[Finding] = []
    out.extend(_stale(result, now))
    if result.status == "refused":
        out.append(
            _f(
                Severity.WARN,
                "refused",
                f"verify refused to measure: {result.refused or 'GPUs busy'}",
                "Measuring beside another job gives false slow GPUs and can disturb that job.",
                "Stop the other processes, or run verify with params.force = true.",
                refused=result.refused,
            )
        )
        return out
    if result.force:
        out.append(
            Finding(
                Severity.INFO,
                "verify.forced",
                "verify measured with params.force: speed figures may be low because of "
                "other processes on the GPUs",
                facts={"force": True},
            )
        )
    stack = _stack(result, now)
    out.extend(stack)
    if any(f.severity is Severity.FAIL for f in stack) and not result.gpus:
        return out
    out.extend(_arch(result))
    out.extend(_gpu_errors(result))
    out.extend(_peers(result))
    out.extend(_host(result))
    out.extend(_links(result))
    out.extend(_nccl(result, now))
    out.extend(_engines(result))
    if result.status == "fail" and not any(f.severity is Severity.FAIL for f in out):
        # The program failed on something no check above names: never let it read as ok.
        out.append(
            _f(
                Severity.FAIL,
                "failed",
                f"verify failed: {result.failures[0] if result.failures else 'no reason given'}",
                "The program on the host reported a failure.",
                "Read the verify job's log on the host; fix what it names. " + _RERUN,
                failures=list(result.failures),
            )
        )
    if not any(f.severity.rank >= Severity.WARN.rank for f in out):
        out.append(_ok(result, now))
    return out


def _age(result: VerifyResult, now: Now) -> str:
    if now.time is None:
        return ""
    age = result.age_s(now.time)
    if age is None:
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if age >= size:
            return f" {age / size:.0f} {unit} ago"
    return f" {age:.0f} s ago"


def _ok(result: VerifyResult, now: Now) -> Finding:
    measured = [g for g in result.gpus if g.measured]
    tf = median([g.matmul_tflops for g in measured if g.matmul_tflops is not None] or [0])
    bw = median([g.copy_gbps for g in measured if g.copy_gbps is not None] or [0])
    title = f"verify passed{_age(result, now)}: {len(measured)} GPU(s), {tf:.0f} TFLOP/s bf16"
    title += f", {bw:.0f} GB/s copy (medians)"
    if result.nccl and result.nccl.busbw_gbps is not None and (result.nccl.world or 0) >= 2:
        title += f", all-reduce busbw {result.nccl.busbw_gbps:.0f} GB/s"
    return Finding(Severity.OK, "verify.ok", title, facts={"finished": str(result.finished)})


def _stale(result: VerifyResult, now: Now) -> list[Finding]:
    changed = []
    if now.driver and result.driver and now.driver != result.driver:
        changed.append(f"driver {result.driver} -> {now.driver}")
    then, then_cuda = result.torch.version, result.torch.cuda
    if now.torch and then:
        # The probe reads the dist-info version (no +cu130 local tag): compare releases, then
        # CUDA builds where both are known.
        moved = now.torch.split("+")[0] != then.split("+")[0]
        rebuilt = bool(now.torch_cuda and then_cuda and now.torch_cuda != then_cuda)
        if moved or rebuilt:
            now_text = now.torch + (f" (CUDA {now.torch_cuda})" if rebuilt else "")
            changed.append(f"torch {then} -> {now_text}")
    if not changed:
        return []
    return [
        _f(
            Severity.WARN,
            "stale",
            f"the last verify result{_age(result, now)} predates a change: {', '.join(changed)}",
            "It proved a stack that is no longer the one installed.",
            "Run verify (V) again.",
            changed=changed,
        )
    ]


def _stack(result: VerifyResult, now: Now) -> list[Finding]:
    t = result.torch
    exe = result.executable or "the serving venv's python"
    if t.import_ok is False:
        return [
            _f(
                Severity.FAIL,
                "torch_import",
                f"torch does not import in {exe}: {t.error or 'unknown error'}",
                "SGLang and vLLM import torch first: nothing can serve.",
                "Install torch for the driver's CUDA into the serving venv (task torch).",
                task="torch",
                error=t.error,
                executable=exe,
            )
        ]
    out = []
    if t.version and t.cuda is None and t.import_ok:
        out.append(
            _f(
                Severity.FAIL,
                "torch_cpu",
                f"torch {t.version} in {exe} is a CPU-only build",
                "A CPU build cannot use the GPUs.",
                "Reinstall torch from the PyTorch index for the driver's CUDA (task torch).",
                task="torch",
                torch=t.version,
            )
        )
    elif t.available is False:
        out.append(
            _f(
                Severity.FAIL,
                "cuda_unavailable",
                f"torch.cuda.is_available() is False (torch {t.version}, CUDA {t.cuda})"
                + (f": {t.error}" if t.error else ""),
                "No kernel can run: the driver is too old for this build, or no GPU is visible.",
                "Check the driver against the build's CUDA; check CUDA_VISIBLE_DEVICES.",
                torch=t.version,
                cuda=t.cuda,
            )
        )
    # The probe's count at the time of the run first: both were read within seconds.
    want = result.expect_gpus if result.expect_gpus is not None else now.gpus
    if t.device_count is not None and want is not None and t.device_count != want:
        out.append(
            _f(
                Severity.FAIL,
                "gpu_count",
                f"CUDA sees {t.device_count} GPU(s), the driver reports {want}",
                "A GPU the driver lists but CUDA cannot open is lost to serving (hidden by "
                "CUDA_VISIBLE_DEVICES, fallen off the bus, or in a bad state).",
                "Check CUDA_VISIBLE_DEVICES, `nvidia-smi -q` and dmesg (Xid) for that GPU.",
                cuda=t.device_count,
                driver=want,
            )
        )
    return out


def _arch(result: VerifyResult) -> list[Finding]:
    out = []
    version = result.torch.version or "?"
    for arch, severity in (("missing", Severity.FAIL), ("ptx", Severity.WARN)):
        gpus = [g for g in result.gpus if g.arch == arch]
        if not gpus:
            continue
        ccs = ", ".join(sorted({f"sm_{(g.cc or '?').replace('.', '')}" for g in gpus}))
        listed = " ".join(result.torch.arch_list) or "?"
        if arch == "missing":
            title = f"torch {version} has no kernels for {ccs} (its arch list: {listed})"
            why = '"no kernel image is available for execution on the device" on these GPUs.'
            fix = f"Install a torch build whose arch list covers {ccs} (task torch)."
        else:
            title = f"torch {version} runs on {ccs} only through PTX JIT ({gpus[0].arch_via})"
            why = "The driver compiles every kernel at first use: a slow first start, and " + (
                "kernels tuned for an older arch."
            )
            fix = f"Prefer a torch build with {ccs} machine code (task torch)."
        out.append(
            _f(
                severity,
                f"arch_{arch}",
                title,
                why,
                fix,
                task="torch",
                gpus=[g.index for g in gpus],
                arch_list=list(result.torch.arch_list),
            )
        )
    return out


def _gpu_errors(result: VerifyResult) -> list[Finding]:
    out = []
    for g in result.gpus:
        if g.error:
            out.append(
                _f(
                    Severity.FAIL,
                    "gpu_error",
                    f"GPU {g.index} ({g.name}): a kernel failed: {g.error}",
                    "A GPU that cannot run a matmul cannot serve; one bad GPU stops a "
                    "tensor-parallel engine on all of them.",
                    "Check `nvidia-smi -q` and dmesg (Xid) for that GPU; reset or replace it. "
                    + _RERUN,
                    gpu=g.index,
                    error=g.error,
                )
            )
        elif g.matmul_ok is False:
            out.append(
                _f(
                    Severity.FAIL,
                    "wrong_result",
                    f"GPU {g.index} ({g.name}): the bf16 matmul gave wrong results "
                    f"(relative error {g.matmul_rel_err})",
                    "A GPU that computes wrong answers corrupts every model output silently.",
                    "Take the GPU out of service; run the vendor's diagnostics (dcgmi diag -r 3).",
                    gpu=g.index,
                    rel_err=g.matmul_rel_err,
                )
            )
    return out


def _peers(result: VerifyResult) -> list[Finding]:
    """Each GPU against the median of the other GPUs of its model on this host."""
    out = []
    measures = (("bf16 matmul", "matmul_tflops", "TFLOP/s"), ("copy", "copy_gbps", "GB/s"))
    for what, attr, unit in measures:
        for g in result.gpus:
            mine = getattr(g, attr)
            others = [
                getattr(o, attr)
                for o in result.gpus
                if o.index != g.index and o.name == g.name and getattr(o, attr) is not None
            ]
            if mine is None or not others:
                continue
            ref = median(others)
            if ref <= 0:
                continue
            short = 1 - mine / ref
            if short <= SLOW_WARN:
                continue
            severity = Severity.FAIL if short > SLOW_FAIL else Severity.WARN
            out.append(
                _f(
                    severity,
                    f"gpu_slow_{attr.split('_')[0]}",
                    f"GPU {g.index} ({g.name}): {what} {mine:.0f} {unit}, {short:.0%} below "
                    f"the median of its {len(others)} peer(s) ({ref:.0f})",
                    "A tensor-parallel engine runs at the pace of its slowest GPU: one slow GPU "
                    "slows the whole host.",
                    "Check that GPU's clocks, power cap and throttle reasons "
                    "(`nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE`) and its cooling. " + _RERUN,
                    gpu=g.index,
                    value=mine,
                    peers_median=ref,
                    below=round(short, 3),
                )
            )
    return out


def _host(result: VerifyResult) -> list[Finding]:
    """The host's median per model against the published peak (floors: verify_expect)."""
    out = []
    models: dict[str, list[VerifyGpu]] = {}
    for g in result.gpus:
        if g.measured and g.name:
            models.setdefault(g.name, []).append(g)
    for name, gpus in models.items():
        peak = peak_for(name)
        if peak is None:
            out.append(
                Finding(
                    Severity.INFO,
                    "verify.no_peak",
                    f"{name}: no published figures in gpudash's table (compared with peers only)",
                    facts={"name": name},
                )
            )
            continue
        for what, attr, published, floor, unit in (
            ("bf16 matmul", "matmul_tflops", peak.bf16_tflops, MATMUL_FLOOR, "TFLOP/s"),
            ("memory copy", "copy_gbps", peak.mem_gbps, COPY_FLOOR, "GB/s"),
        ):
            values = [getattr(g, attr) for g in gpus if getattr(g, attr) is not None]
            if not values:
                continue
            mid = median(values)
            low = published * floor
            if mid >= low:
                continue
            severity = Severity.FAIL if mid < low * FAIL_FRACTION else Severity.WARN
            out.append(
                _f(
                    severity,
                    f"host_slow_{attr.split('_')[0]}",
                    f"{name}: {what} {mid:.0f} {unit} (median of {len(values)}), below "
                    f"{low:.0f} ({floor:.0%} of the {peak.model}'s {published:.0f})",
                    "Every GPU being slow points at the host: power capping, clocks locked low, "
                    "a wrong GPU model, or another job on the GPUs.",
                    "Check `nvidia-smi -q -d PERFORMANCE,POWER,CLOCK` (power limit, clocks, "
                    "throttle reasons) and that nothing else runs. " + _RERUN,
                    name=name,
                    median=mid,
                    expected_min=round(low, 1),
                    peak=published,
                    source=peak.source,
                )
            )
    return out


def _links(result: VerifyResult) -> list[Finding]:
    out = []
    for g in result.gpus:
        link = pcie_gbps(g.pcie_gen_max, g.pcie_width_max)
        if link is None:
            continue
        for direction, value in (("H2D", g.h2d_gbps), ("D2H", g.d2h_gbps)):
            if value is None or value >= link * LINK_FLOOR:
                continue
            out.append(
                _f(
                    Severity.WARN,
                    f"{direction.lower()}_low",
                    f"GPU {g.index}: {direction} {value:.1f} GB/s, under {LINK_FLOOR:.0%} of its "
                    f"PCIe Gen{g.pcie_gen_max} x{g.pcie_width_max} link ({link:.0f} GB/s)",
                    "Model loading and host-memory offload run over this link; a link trained "
                    "down (width or generation) or a GPU on the far CPU socket halves them.",
                    "Check the link's current gen/width (`nvidia-smi -q -d PCIE`), the slot and "
                    "riser, and the GPU's NUMA affinity. " + _RERUN,
                    gpu=g.index,
                    value=value,
                    link_gbps=round(link, 1),
                    gen=g.pcie_gen_max,
                    width=g.pcie_width_max,
                )
            )
    return out


def _fabric(gpus: Sequence[VerifyGpu]) -> str | None:
    fabrics = {(peak.fabric if (peak := peak_for(g.name)) else None) for g in gpus}
    return fabrics.pop() if len(fabrics) == 1 else None


def _nccl(result: VerifyResult, now: Now) -> list[Finding]:
    n = result.nccl
    if n is None or (n.world or 0) < 2:
        return []
    if n.error or n.ok is False:
        return [
            _f(
                Severity.FAIL,
                "nccl_failed",
                f"NCCL all-reduce over {n.world} GPUs failed: {n.error or 'wrong sum'}",
                "Tensor-parallel serving all-reduces every layer: it cannot start.",
                "Run with NCCL_DEBUG=INFO to see the transport; check P2P/IOMMU/ACS settings "
                "and the fabric manager on NVSwitch boards. " + _RERUN,
                world=n.world,
                error=n.error,
            )
        ]
    if n.busbw_gbps is None:
        return []
    fabric = _fabric(result.gpus)
    expected = BUSBW.get(fabric) if fabric else None
    if expected is None or now.nvlink_all is not True:
        why = (
            "not every GPU pair is on NVLink"
            if now.nvlink_all is False
            else "the topology is unknown"
            if now.nvlink_all is None
            else "no published range for this GPU model"
        )
        return [
            Finding(
                Severity.INFO,
                "verify.busbw_unjudged",
                f"all-reduce busbw {n.busbw_gbps:.0f} GB/s over {n.world} GPUs (not judged: {why})",
                facts={"busbw_gbps": n.busbw_gbps, "world": n.world},
            )
        ]
    if n.busbw_gbps >= expected.low:
        return []
    severity = Severity.FAIL if n.busbw_gbps < expected.low * FAIL_FRACTION else Severity.WARN
    return [
        _f(
            severity,
            "busbw_low",
            f"all-reduce busbw {n.busbw_gbps:.0f} GB/s over {n.world} GPUs, below the "
            f"{expected.low:.0f}-{expected.high:.0f} GB/s published for {fabric} (NVLS off)",
            "Every tensor-parallel layer waits on this all-reduce: decode slows with it.",
            "Check `nvidia-smi nvlink -s` for links down, the fabric manager, and that "
            "NCCL_P2P_DISABLE / NCCL_P2P_LEVEL are not set. " + _RERUN,
            busbw_gbps=n.busbw_gbps,
            expected_low=expected.low,
            world=n.world,
            source=expected.source,
        )
    ]


def _engines(result: VerifyResult) -> list[Finding]:
    out = []
    for e in result.engines:
        if e.ok:
            continue
        what = "does not import" if not e.import_ok else f"{e.op or 'its test op'} failed"
        out.append(
            _f(
                Severity.FAIL,
                "engine_failed",
                f"{e.name} {e.version or ''} {what}: {e.error or 'no error text'}".replace(
                    "  ", " "
                ),
                f"The serving engine loads {e.name} at start: it fails the same way.",
                f"Install a {e.name} build for this torch, CUDA and GPU arch (task serving). "
                + _RERUN,
                task="serving",
                engine=e.name,
                version=e.version,
                error=e.error,
            )
        )
    return out
