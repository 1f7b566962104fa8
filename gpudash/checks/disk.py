"""Disk: incomplete model folders, and configured models that will not fit where they go."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpudash.checks.context import Context
from gpudash.checks.finding import Finding, Severity

if TYPE_CHECKING:
    from gpudash.probe.sections.models import Model, Models


def find_model(models: Models, repo: str) -> Model | None:
    """The model folder holding `repo` ("org/name"): a hub cache entry "org/name", a nested
    "org/name" folder, or a plain folder named "name". A complete one wins over a partial."""
    want = repo.lower()
    base = want.rsplit("/", 1)[-1]
    hits = [
        m for d in models.dirs for m in d.models if m.name.lower() == want or m.name.lower() == base
    ]
    return next((m for m in hits if m.complete), hits[0] if hits else None)


def free_bytes_for(models: Models, path: str) -> tuple[int | None, str | None]:
    """Free bytes of the file system holding `path` on the host, and which probed path or
    mount told us. `~/x` is matched against probed paths under a home directory."""
    fss = [fs for fs in models.filesystems if fs.free_bytes is not None]
    clean = path.rstrip("/") or "/"
    for fs in fss:
        if fs.path.rstrip("/") == clean:
            return fs.free_bytes, fs.mount or fs.path
    if clean == "~" or clean.startswith("~/"):
        rest = clean[1:]
        for fs in fss:
            if re.fullmatch(r"(/root|/home/[^/]+|/Users/[^/]+)" + re.escape(rest), fs.path):
                return fs.free_bytes, fs.mount or fs.path
        return None, None
    best = None
    for fs in fss:
        mount = (fs.mount or "").rstrip("/") or "/"
        inside = clean == mount or clean.startswith(mount.rstrip("/") + "/")
        longer = best is None or len(mount) > len((best.mount or "").rstrip("/") or "/")
        if fs.mount and inside and longer:
            best = fs
    return (best.free_bytes, best.mount) if best else (None, None)


def check(ctx: Context) -> list[Finding]:
    models = ctx.models
    if models is None:
        return []
    out: list[Finding] = []
    for d in models.dirs:
        for m in d.models:
            if m.complete:
                continue
            missing = m.missing_count or len(m.missing)
            what = (
                f"{missing} of {m.shards} shards missing"
                if m.shards and missing
                else "no config.json"
                if not m.has_config and m.has_weights
                else "no weight files"
                if not m.has_weights
                else "incomplete"
            )
            if m.partial_downloads:
                what += f", {m.partial_downloads} partial download(s)"
            out.append(
                Finding(
                    Severity.WARN,
                    "disk.incomplete_model",
                    f"model {m.name} at {m.path}: {what}",
                    why="Loading it fails, often with a confusing error about a missing key "
                    "or file; a half-finished download is the usual cause.",
                    fix="Resume the download (`hf download` resumes) or delete the folder.",
                    facts={
                        "path": m.path,
                        "missing": list(m.missing[:8]),
                        "missing_count": missing,
                        "shards": m.shards,
                        "partial_downloads": m.partial_downloads,
                    },
                    fix_task="model",
                    fix_params={"repo": m.name} if "/" in m.name else {},
                )
            )
    exp = ctx.expect
    for want in (exp.models or ()) if exp is not None else ():
        if want.size_gb is None:
            continue
        have = find_model(models, want.repo)
        if have is not None and have.complete:
            continue
        target = want.dir or _first_dir(ctx)
        if target is None:
            continue
        free, where = free_bytes_for(models, target)
        if free is None:
            continue
        done = (have.size_bytes or 0) if have is not None else 0
        need = max(0.0, want.size_gb * 1e9 - done)
        if need > free:
            out.append(
                Finding(
                    Severity.FAIL,
                    "disk.model_does_not_fit",
                    f"model {want.repo} needs {need / 1e9:.0f} GB more; {free / 1e9:.0f} GB free "
                    f"at {target}",
                    why="The download fails partway and leaves an incomplete folder behind.",
                    fix="Free space, mount a larger volume, or download to another dir "
                    "(expect.models dir / the model task's dir).",
                    facts={
                        "repo": want.repo,
                        "size_gb": want.size_gb,
                        "have_gb": round(done / 1e9, 1),
                        "free_gb": round(free / 1e9, 1),
                        "dir": target,
                        "mount": where,
                    },
                )
            )
    if not out:
        n = sum(len(d.models) for d in models.dirs)
        out.append(Finding(Severity.OK, "disk.ok", f"{n} model folder(s), all complete"))
    return out


def _first_dir(ctx: Context) -> str | None:
    if ctx.models is None:
        return None
    existing = [d.path for d in ctx.models.dirs if d.exists]
    if existing:
        return existing[0]
    if ctx.host is not None and ctx.host.model_dirs:
        return ctx.host.model_dirs[0]
    return None
