"""Expectations: each thing the config's `expect` says (gpudash.config.expect) that
the host does not meet is a fail finding; one the probe cannot verify is a warn."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any

from gpudash.checks.context import Context
from gpudash.checks.finding import Finding, Severity
from gpudash.config.expect import Expect, ExpectedModel
from gpudash.versions import parse_version

_CONFIG = "The config's `expect` says so: a host that differs is not the machine it should be."


def _fail(code: str, title: str, why: str = _CONFIG, fix: str = "", **facts: Any) -> Finding:
    task = facts.pop("fix_task", None)
    params = facts.pop("fix_params", {})
    return Finding(
        Severity.FAIL, f"expect.{code}", title, why, fix, facts, fix_task=task, fix_params=params
    )


def _unverified(key: str, title: str, fix: str) -> Finding:
    return Finding(
        Severity.WARN,
        "expect.unverified",
        title,
        why=f"The config expects {key}, but the probe has nothing to compare it with.",
        fix=fix,
        facts={"key": key},
    )


def check(ctx: Context) -> list[Finding]:
    exp = ctx.expect
    if exp is None:
        return []
    out: list[Finding] = []
    for part in _PARTS:
        out.extend(part(ctx, exp))
    if not out:
        keys = ", ".join(exp.to_json())
        out.append(Finding(Severity.OK, "expect.ok", f"meets every expectation ({keys})"))
    return out


def _gpus(ctx: Context, exp: Expect) -> list[Finding]:
    if ctx.gpus is None:
        return []
    gpus = ctx.gpu_list
    out = []
    if exp.gpus is not None and len(gpus) != exp.gpus:
        title = f"{len(gpus)} GPUs here, expected {exp.gpus}"
        out.append(_fail("gpus", title, have=len(gpus), expected=exp.gpus))
    if exp.gpu_name is not None:
        wrong = [g for g in gpus if not _name_matches(g.name, exp.gpu_name.lower())]
        if wrong or not gpus:
            names = ", ".join(sorted({g.name or "?" for g in wrong})) or "no GPUs"
            title = f"GPU {names} does not match {exp.gpu_name!r}"
            out.append(
                _fail("gpu_name", title, gpus=[g.index for g in wrong], expected=exp.gpu_name)
            )
    if exp.min_cc is not None:
        want = parse_version(exp.min_cc) or ()
        low = [g for g in gpus if (parse_version(g.cc) or (0,)) < want]
        if low:
            have = ", ".join(sorted({f"{g.cc or '?'} ({g.name})" for g in low}))
            out.append(
                _fail(
                    "min_cc",
                    f"compute capability {have} below {exp.min_cc}",
                    "Kernels and dtypes depend on it (FP8 needs 8.9+, FP4 10.0+).",
                    gpus=[g.index for g in low],
                    expected=exp.min_cc,
                )
            )
    return out


def _nvlink(ctx: Context, exp: Expect) -> list[Finding]:
    topo = ctx.topology
    if topo is None or topo.gpu_pairs == 0:
        return []
    out = []
    pairs, nv = topo.gpu_pairs, topo.nvlink_pairs
    bad = {"all": nv < pairs, "none": nv > 0, "any": nv == 0}
    if exp.nvlink is not None and bad[exp.nvlink]:
        out.append(
            _fail(
                "nvlink",
                f"NVLink on {nv} of {pairs} GPU pairs, expected {exp.nvlink!r}",
                "Tensor parallelism across pairs without NVLink runs at PCIe speed.",
                summary=topo.summary,
                expected=exp.nvlink,
            )
        )
    low = topo.min_nvlink
    if exp.min_nvlink is not None and (nv < pairs or low is None or low < exp.min_nvlink):
        have = f"NV{low}" if low is not None else "no NVLink"
        if 0 < nv < pairs:
            have += " (and some pairs have none)"
        out.append(
            _fail(
                "min_nvlink",
                f"weakest GPU pair has {have}, expected NV{exp.min_nvlink}",
                "A pair with fewer links than the board's usual count has a link down.",
                summary=topo.summary,
                expected=exp.min_nvlink,
            )
        )
    return out


def _versions(ctx: Context, exp: Expect) -> list[Finding]:
    out = []
    for key, have, what in (
        ("driver", ctx.driver_version, "driver"),
        ("cuda", ctx.reported_cuda, "driver CUDA"),
    ):
        spec = getattr(exp, key)
        if spec is None or (ctx.gpus is None and ctx.toolkit is None):
            continue
        ok = spec.matches(have)
        if ok is False:
            title = f"{what} {have} here, expected {spec}"
            out.append(_fail(key, title, have=have, expected=str(spec)))
        elif ok is None:
            out.append(_unverified(key, f"{what} unknown; expected {spec}", "Re-probe."))
    if exp.nvcc is not None and ctx.toolkit is not None:
        first = next((n for n in ctx.toolkit.nvcc if n.release), None)
        have = (first.version or first.release) if first else None
        if first is None or not exp.nvcc.matches(have):
            where = f"nvcc {have} ({first.path}) first on PATH" if first else "no nvcc found"
            out.append(
                _fail(
                    "nvcc",
                    f"{where}, expected {exp.nvcc}",
                    "JIT kernels and source builds use the nvcc first on PATH.",
                    "Install that CUDA toolkit and put its bin first on PATH.",
                    have=have,
                    expected=str(exp.nvcc),
                )
            )
    if exp.python is not None and ctx.env is not None:
        versions = [v.python for v in ctx.venvs if v.python] or [
            p.version for p in ctx.env.pythons if p.version
        ]
        if not any(exp.python.matches(v) for v in versions):
            out.append(
                _fail(
                    "python",
                    f"no python {exp.python} (have: {', '.join(versions) or 'none'})",
                    fix="Create the serving venv with that Python (uv venv --python X.Y).",
                    have=versions,
                    expected=str(exp.python),
                    fix_task="venv",
                )
            )
    if exp.torch is not None and ctx.env is not None:
        torches = [v.packages["torch"] for v in ctx.venvs if "torch" in v.packages]
        if not any(exp.torch.matches(t) for t in torches):
            out.append(
                _fail(
                    "torch",
                    f"no torch {exp.torch} in any venv (have: {', '.join(torches) or 'none'})",
                    fix="Install that torch version into the serving venv.",
                    have=torches,
                    expected=str(exp.torch),
                    fix_task="torch",
                )
            )
    return out


def _disk(ctx: Context, exp: Expect) -> list[Finding]:
    from gpudash.checks.disk import find_model, free_bytes_for

    if ctx.models is None:
        return []
    out = []
    for path, gb in exp.min_free_gb or ():
        free, mount = free_bytes_for(ctx.models, path)
        if free is None:
            fix = f"Add {path} to model_dirs so that the probe measures it."
            out.append(_unverified("min_free_gb", f"free space of {path} not known", fix))
        elif free < gb * 1e9:
            out.append(
                _fail(
                    "min_free_gb",
                    f"{free / 1e9:.0f} GB free at {path}, expected {gb:g} GB",
                    "Model downloads into it fail partway.",
                    "Free space there or mount a larger volume.",
                    path=path,
                    mount=mount,
                    free_gb=round(free / 1e9, 1),
                    expected_gb=gb,
                )
            )
    for want in exp.models or ():
        model = find_model(ctx.models, want.repo)
        if model is None:
            out.append(
                _fail(
                    "model_missing",
                    f"model {want.repo} not on the host",
                    "The server cannot start without its weights.",
                    f"Download it (hf download {want.repo}).",
                    repo=want.repo,
                    fix_task="model",
                    fix_params=_params(want),
                )
            )
        elif not model.complete:
            out.append(
                _fail(
                    "model_incomplete",
                    f"model {want.repo} at {model.path} is incomplete",
                    "A half-downloaded model fails to load, often with a confusing error.",
                    "Resume the download (hf download resumes).",
                    repo=want.repo,
                    path=model.path,
                    missing_shards=model.missing_count,
                    fix_task="model",
                    fix_params=_params(want),
                )
            )
    return out


def _network(ctx: Context, exp: Expect) -> list[Finding]:
    net = ctx.network
    if net is None:
        return []
    out = []
    for host in exp.reachable or ():
        targets = [t for t in net.targets if (t.host or "").lower() == host]
        if not targets:
            fix = f"Add https://{host}/ to network_targets."
            out.append(_unverified("reachable", f"{host} is not a probed network target", fix))
        elif not any(t.ok for t in targets):
            t = targets[0]
            reason = t.error or (f"HTTP {t.http_status}" if t.http_status else "no answer")
            out.append(
                _fail(
                    "reachable",
                    f"{host} unreachable: {reason}",
                    "Downloads from it fail.",
                    "Open the firewall to it or set a proxy (https_proxy).",
                    host=host,
                    url=t.url,
                    error=t.error,
                )
            )
    if exp.hf_token is not None and net.hf_token != exp.hf_token:
        if exp.hf_token:
            title, fix = "no HF token on the host", "Run `hf auth login` or set HF_TOKEN."
        else:
            title, fix = f"an HF token is on the host ({net.hf_token_source})", "Remove it."
        out.append(_fail("hf_token", title, fix=fix, source=net.hf_token_source))
    return out


_PARTS: tuple[Callable[[Context, Expect], list[Finding]], ...] = (
    _gpus,
    _nvlink,
    _versions,
    _disk,
    _network,
)


def _params(want: ExpectedModel) -> dict[str, str]:
    params = {"repo": want.repo}
    if want.dir:
        params["dir"] = want.dir
    return params


def _name_matches(name: str, pattern: str) -> bool:
    lowered = (name or "").lower()
    short_name = re.sub(r"^nvidia\s+", "", lowered)
    return fnmatch.fnmatchcase(lowered, pattern) or fnmatch.fnmatchcase(short_name, pattern)
