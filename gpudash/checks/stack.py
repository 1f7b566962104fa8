"""Does a torch (or engine) build run on this driver and these GPUs? Pure verdicts from facts.

A build runs when (1) the driver can run its CUDA, natively or through minor-version
compatibility, and (2) every GPU has SASS for its cc, SASS of a lower minor of the same major
(binary compatibility), or PTX it can JIT (a warning: slow first start, and not under MVC).
A cc newer than gpudash's facts is said to be unknown, never failed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from gpudash.checks.facts import FACTS_DATE
from gpudash.checks.facts.binary_compat import parse_arch_list, ptx_runs, sass_runs
from gpudash.checks.facts.cuda_driver import MVC_MIN_DRIVER, NATIVE_MIN_DRIVER
from gpudash.checks.facts.torch_builds import TorchBuild, builds_of, release_key, releases
from gpudash.versions import compare, parse_version

# Compute capabilities NVIDIA has published up to FACTS_DATE. A cc outside this set is said
# "unknown to this gpudash", never a fail. Sources, row by row:
#   2.0 .. 9.0: NVIDIA's CUDA GPUs page, https://developer.nvidia.com/cuda-gpus (compute
#     capability table with its legacy Fermi/Kepler rows, read 2026-12-03).
#   10.0, 10.1, 10.3, 12.0, 12.1: cuRANDDx 0.2.0 release notes ("Blackwell architectures,
#     including SM100, SM101, SM103, SM120, and SM121"),
#     https://docs.nvidia.com/cuda/curanddx/release_notes.html
#   11.0: Thor renamed from sm_101 to sm_110 "starting from CUDA 13.0" (same page, 0.2.1; and
#     https://docs.nvidia.com/cuda/nvcompdx/release_notes.html 0.1.1); 10.1 kept for CUDA 12.9.
#   10.7: Rubin, added by CUDA 13.4 / PTX ISA 9.4 (GCC nvptx patch "Update -march-map= for
#     newer sm_{107,110}", gcc-patches, https://www.mail-archive.com/gcc-patches@gcc.gnu.org/msg419655.html).
KNOWN_CCS = frozenset(
    {
        (2, 0),
        (2, 1),
        (3, 0),
        (3, 2),
        (3, 5),
        (3, 7),
        (5, 0),
        (5, 2),
        (5, 3),
        (6, 0),
        (6, 1),
        (6, 2),
        (7, 0),
        (7, 2),
        (7, 5),
        (8, 0),
        (8, 6),
        (8, 7),
        (8, 9),
        (9, 0),
        (10, 0),
        (10, 1),
        (10, 3),
        (10, 7),
        (11, 0),
        (12, 0),
        (12, 1),
    }
)

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class GpuFit:
    cc: str
    how: str  # "sass" | "sass_compat" | "stated" | "ptx" | "none" | "unknown" | "no_cc"
    matched: str  # "sm_100" / "compute_120" / ""; "stated": the release's own docs say so

    @property
    def severity(self) -> str:
        return {"sass": OK, "sass_compat": OK, "stated": OK, "none": FAIL}.get(self.how, WARN)


@dataclass(frozen=True)
class Verdict:
    severity: str
    driver_path: str  # "native" | "mvc" | "none" | "unknown"
    driver_reason: str
    gpus: tuple[GpuFit, ...] = field(default=())
    reason: str = ""

    @property
    def runs(self) -> bool:
        return self.severity != FAIL


def _cc(text: str | None) -> tuple[int, int] | None:
    v = parse_version(text)
    return (v[0], v[1]) if v is not None and len(v) >= 2 else None


def driver_path(
    cuda: tuple[int, int], driver: str | None, reported_cuda: str | None = None
) -> tuple[str, str]:
    """How a CUDA `cuda` build runs on `driver`, and why, from NVIDIA's tables.

    `reported_cuda` is the "CUDA Version" nvidia-smi printed: the newest CUDA the driver runs
    natively, which settles the question without the table (and without a driver version: a
    driver natively at X.y is at least X.y's GA driver, so at least the MVC floor of X).
    """
    d = parse_version(driver)
    name = f"CUDA {cuda[0]}.{cuda[1]}"
    top = _cc(reported_cuda)
    if top is not None:
        label = f"{'driver ' + driver if driver else 'the driver'} (CUDA {top[0]}.{top[1]})"
        if cuda <= top:
            return "native", f"{label} runs {name} natively"
        floor = MVC_MIN_DRIVER.get(cuda[0])
        ga = parse_version(NATIVE_MIN_DRIVER.get(top))
        if (
            d is None
            and cuda[0] == top[0]
            and floor is not None
            and ga is not None
            and compare(ga, parse_version(floor) or ()) >= 0
        ):
            # Natively at X.y means at least X.y's GA driver, which is above X's MVC floor.
            return "mvc", f"{label} runs {name} through minor-version compatibility"
        if d is None and cuda[0] > top[0]:
            need = NATIVE_MIN_DRIVER.get(cuda) or MVC_MIN_DRIVER.get(cuda[0]) or "?"
            return "none", f"{label} is older than {need}, the minimum for {name}"
    if d is None:
        return "unknown", "driver version unknown"
    native = parse_version(NATIVE_MIN_DRIVER.get(cuda))
    if native is not None and compare(d, native) >= 0:
        return "native", f"driver {driver} >= {NATIVE_MIN_DRIVER[cuda]} runs {name} natively"
    floor = MVC_MIN_DRIVER.get(cuda[0])
    if floor is not None and compare(d, parse_version(floor) or ()) >= 0:
        return (
            "mvc",
            f"driver {driver} runs {name} through minor-version compatibility (>= {floor})",
        )
    least = NATIVE_MIN_DRIVER.get(cuda) if floor is None else floor
    return "none", f"driver {driver} is older than {least or '?'}, the minimum for {name}"


def min_driver(cuda: tuple[int, int]) -> str | None:
    """The oldest driver that runs a CUDA `cuda` build at all (MVC floor, else native)."""
    return MVC_MIN_DRIVER.get(cuda[0]) or NATIVE_MIN_DRIVER.get(cuda)


def gpu_fit(arch_list: str, cc_text: str | None, mvc: bool = False) -> GpuFit:
    """How kernels of `arch_list` reach a GPU of compute capability `cc_text`."""
    cc = _cc(cc_text)
    if cc is None:
        return GpuFit(cc_text or "?", "no_cc", "")
    targets = parse_arch_list(arch_list)
    exact = next((t for t in targets if sass_runs(t, cc) and t.cc == cc), None)
    if exact is not None:
        return GpuFit(cc_text or "", "sass", exact.sm)
    compat = [t for t in targets if sass_runs(t, cc)]
    if compat:
        return GpuFit(cc_text or "", "sass_compat", max(compat, key=lambda t: t.cc).sm)
    ptx = [t for t in targets if ptx_runs(t, cc)]
    if ptx and not mvc:
        best = max(ptx, key=lambda t: t.cc)
        return GpuFit(cc_text or "", "ptx", f"compute_{best.cc[0]}{best.cc[1]}")
    if cc not in KNOWN_CCS:  # newer than these facts, or never published: not a fail
        return GpuFit(cc_text or "", "unknown", "")
    return GpuFit(cc_text or "", "none", "")


def _worst(severities: Sequence[str]) -> str:
    return FAIL if FAIL in severities else WARN if WARN in severities else OK


def _gpu_reason(build_name: str, fits: Sequence[GpuFit]) -> str:
    parts = []
    for f in fits:
        sm = f"sm_{f.cc.replace('.', '')}"
        if f.how == "none":
            parts.append(f"{build_name} has no {sm} kernels")
        elif f.how == "ptx":
            parts.append(f"{sm} runs only by JIT from {f.matched} PTX")
        elif f.how == "unknown":
            parts.append(f"cc {f.cc} is unknown to this gpudash (facts of {FACTS_DATE})")
        elif f.how == "no_cc":
            parts.append("a GPU's compute capability is unknown")
    return "; ".join(dict.fromkeys(parts))


def torch_runs_here(
    build: TorchBuild,
    driver: str | None,
    ccs: Sequence[str | None],
    reported_cuda: str | None = None,
) -> Verdict:
    """Whether `build` runs on `driver` with GPUs of compute capabilities `ccs`."""
    path, why = driver_path(build.cuda, driver, reported_cuda)
    fits = tuple(gpu_fit(build.arch_list, cc, mvc=path == "mvc") for cc in ccs)
    name = f"torch {build.release}+{build.variant}"
    sev = _worst(
        [f.severity for f in fits] + [FAIL if path == "none" else WARN if path == "unknown" else OK]
    )
    reasons = [why] if path in ("none", "unknown") else []
    gpu_reason = _gpu_reason(name, fits)
    if gpu_reason:
        reasons.append(gpu_reason)
    return Verdict(sev, path, why, fits, "; ".join(reasons))


@dataclass(frozen=True)
class Choice:
    build: TorchBuild | None
    verdict: Verdict | None
    why: str  # one line: release, variant, the arch it matched, driver path; or the reason


def _why(build: TorchBuild, v: Verdict) -> str:
    matched = ", ".join(dict.fromkeys(f"{f.cc}->{f.matched or f.how}" for f in v.gpus))
    how = {"sass": "SASS", "sass_compat": "SASS by binary compatibility", "ptx": "PTX JIT"}
    kinds = ", ".join(dict.fromkeys(how.get(f.how, f.how) for f in v.gpus))
    return (
        f"torch {build.release} {build.variant}: {matched or 'no GPU'} ({kinds}); "
        f"driver path {v.driver_path} ({v.driver_reason})"
    )


def _rank(v: Verdict) -> tuple[int, int]:
    return (0 if v.severity == OK else 1, 0 if v.driver_path == "native" else 1)


def choose_torch(
    driver: str | None,
    ccs: Sequence[str | None],
    pin_torch: str | None = None,
    pin_cuda: str | None = None,
    reported_cuda: str | None = None,
    broken: Collection[int] = (),
) -> Choice:
    """The newest torch release with a variant that runs on every GPU under `driver`.

    Within a release a clean verdict beats a warning, native beats MVC, newer CUDA wins ties.
    `pin_torch` ("2.9.*", "2.9") and `pin_cuda` ("cu126") narrow the candidates; a pin that
    cannot run is refused with the reason of the pinned build itself. A GPU without a known
    cc, or a driver of unknown version, is a refusal that says so: never a guess.

    One exception: GPUs the driver reports broken (`broken`: indices in ERR!, whose cc cannot
    be read) on a host whose readable GPUs are all one compute capability. A host of 8 is one
    model in practice, and a broken GPU runs nothing anyway: the choice is made from the
    others and says, as a warning, which GPU it could not look at.
    """
    missing = [i for i, cc in enumerate(ccs) if _cc(cc) is None]
    readable = {cc for cc in ccs if _cc(cc) is not None}
    warning = ""
    if missing and set(missing) <= set(broken) and len(readable) == 1:
        others = [cc for cc in ccs if _cc(cc) is not None]
        shown = ", ".join(map(str, missing))
        warning = (
            f"; warn: GPU {shown} in error (cc unknown) left out: chosen from the other "
            f"{len(others)}, all cc {others[0]}; check GPU {shown} runs this build once repaired"
        )
        ccs, missing = others, []
    if missing:
        return Choice(
            None,
            None,
            f"compute capability unknown for GPU {', '.join(map(str, missing))}: "
            'cannot tell which wheels have its kernels; set cuda = "cuNNN"',
        )
    if parse_version(driver) is None and _cc(reported_cuda) is None:
        return Choice(None, None, 'driver version unknown: set cuda = "cuNNN"')
    prefix = (pin_torch or "").rstrip("*").rstrip(".")
    wanted = [
        r
        for r in releases()
        if not prefix or r == prefix or r.startswith(prefix + ".") or prefix.startswith(r + ".")
    ]
    last: tuple[TorchBuild, Verdict] | None = None
    for release in wanted:
        ok = []
        for build in builds_of(release):
            if pin_cuda and build.variant != pin_cuda:
                continue
            v = torch_runs_here(build, driver, ccs, reported_cuda)
            if v.runs and v.driver_path != "unknown":
                ok.append((build, v))
            elif last is None or not (pin_torch or pin_cuda):
                last = (build, v)  # pinned: the newest pinned build; else the oldest tried
        if ok:
            build, v = min(ok, key=lambda bv: _rank(bv[1]))
            return Choice(build, v, _why(build, v) + warning)
    pins = " ".join(p for p in (f"torch {pin_torch}" if pin_torch else "", pin_cuda or "") if p)
    if last is None:
        what = f"no torch build in gpudash's facts (of {FACTS_DATE}) matches {pins or 'this host'}"
        return Choice(None, None, what)
    build, v = last
    if pins:
        return Choice(None, v, f"pinned {pins}: {v.reason}")
    return Choice(None, v, "no torch build runs here: " + _no_fit(driver, ccs, reported_cuda, v))


def _no_fit(
    driver: str | None, ccs: Sequence[str | None], reported_cuda: str | None, last: Verdict
) -> str:
    """Why nothing fits, truly: the lowest driver that runs some build with kernels for every
    GPU (the newest such build named), or that no published build has kernels for them."""
    fitting = []
    for release in releases():
        for build in builds_of(release):
            v = torch_runs_here(build, driver, ccs, reported_cuda)
            need = parse_version(min_driver(build.cuda))
            if need is not None and all(f.severity != FAIL for f in v.gpus):
                fitting.append((need, build))
    if fitting:
        lowest = min(need for need, _ in fitting)
        build = next(b for need, b in fitting if need == lowest)
        text = min_driver(build.cuda) or "?"
        return (
            f"driver {driver or '?'} is older than {text}, the oldest driver that runs a build "
            f"with kernels for these GPUs (torch {build.release} {build.variant}); "
            f"upgrade the driver to >= {text}"
        )
    return last.reason


def suggest_fix(
    driver: str | None,
    ccs: Sequence[str | None],
    build: TorchBuild,
    reported_cuda: str | None = None,
) -> str:
    """The exact way out for a build that cannot run: the same release in another variant,
    the same variant on an older release that still has the kernels, and the release gpudash
    would pick."""
    same = [
        b
        for r in releases()
        for b in builds_of(r)
        if b.variant == build.variant and release_key(b.release) < release_key(build.release)
    ]
    options = []
    for b in builds_of(build.release):  # the same release, another variant
        if b.variant != build.variant:
            v = torch_runs_here(b, driver, ccs, reported_cuda)
            if v.severity == OK:
                options.append(f"torch {b.release} {b.variant}")
                break
    for b in same:
        if torch_runs_here(b, driver, ccs, reported_cuda).runs:
            options.append(f"torch {b.release} {b.variant}")
            break
    best = choose_torch(driver, ccs, reported_cuda=reported_cuda)
    if best.build is not None:
        options.append(f"torch {best.build.release} {best.build.variant}")
    return "use " + " or ".join(dict.fromkeys(options)) if options else best.why
