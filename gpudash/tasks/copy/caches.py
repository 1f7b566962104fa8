"""The JIT caches a copy brings along with `params.caches = true`: where each tool keeps its
compiled kernels, found by one small script on each host (a tool's env variable wins, as in the
tool), and the copy spec of each cache that exists on the source.

A venv copied to a fresh host works at once, but its first start compiles every kernel again
(minutes of FlashInfer and Triton JIT, then torch.compile). Copying the caches the source built
skips that. Each cache is its own verified copy (`copy.kind` runs them after the main one);
it lands where the same tool on the destination looks, which is the same path when both hosts
use the defaults (a path under the source's $HOME goes under the destination's $HOME).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpudash.tasks.copy.params import CopyParams
from gpudash.tasks.prepare import Prepared
from gpudash.text import clean_line, is_uint


@dataclass(frozen=True)
class Cache:
    name: str
    shell: str
    """Where the tool keeps it, as a shell word (the tool's own variables first)."""
    source: str
    """The tool's own code that says so."""


CACHES: tuple[Cache, ...] = (
    # FLASHINFER_CACHE_DIR = $FLASHINFER_WORKSPACE_BASE (default: home) / .cache / flashinfer
    # https://github.com/flashinfer-ai/flashinfer/blob/05ce648b408ab17c2c31ad7b498b3c28d15b9369/flashinfer/jit/env.py
    Cache(
        "flashinfer",
        '"${FLASHINFER_WORKSPACE_BASE:-$HOME}/.cache/flashinfer"',
        "flashinfer/jit/env.py @ 05ce648b",
    ),
    # cache_knobs.dir = $TRITON_CACHE_DIR, else $TRITON_HOME (default: ~/) / .triton / cache
    # https://github.com/triton-lang/triton/blob/00c7dbd4070eb07192dd047bc88f19ba310f9dfd/python/triton/knobs.py
    Cache(
        "triton",
        '"${TRITON_CACHE_DIR:-${TRITON_HOME:-$HOME}/.triton/cache}"',
        "python/triton/knobs.py @ 00c7dbd4",
    ),
    # cache_dir() = $TORCHINDUCTOR_CACHE_DIR, else tempfile.gettempdir() (TMPDIR, TEMP, TMP,
    # then /tmp) / "torchinductor_" + getpass.getuser() (LOGNAME, USER, ..., then the passwd
    # name); the name's / \ : * ? " < > | become _, which a Unix login name does not have.
    # https://github.com/pytorch/pytorch/blob/24beefe432a78f66c5451435b614c512dfce8fe1/torch/_inductor/runtime/cache_dir_utils.py
    Cache(
        "torch inductor",
        '"${TORCHINDUCTOR_CACHE_DIR:-${TMPDIR:-${TEMP:-${TMP:-/tmp}}}/torchinductor_'
        '${LOGNAME:-${USER:-$(id -un)}}}"',
        "torch/_inductor/runtime/cache_dir_utils.py @ 24beefe4",
    ),
    # VLLM_CACHE_ROOT, else get_default_cache_root() ($XDG_CACHE_HOME, else ~/.cache) / vllm;
    # its torch.compile cache is VLLM_CACHE_ROOT/torch_compile_cache
    # https://github.com/vllm-project/vllm/blob/f218f9c24d224800e0ea4488aa71bd8215c8bdcd/vllm/envs.py
    Cache(
        "vllm",
        '"${VLLM_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/vllm}"',
        "vllm/envs.py @ f218f9c2",
    ),
)

# One line per cache: `present|absent TAB INDEX TAB PATH`, the path with a leading $HOME
# written as ~ (so it lands under the other host's home). A variable set to `~/x` is
# expanded as the tools do (os.path.expanduser). "present" = a directory with an entry.
_LINE = r"""
gd_one() {
    d=$2
    case "$d" in "~") d=$HOME ;; "~/"*) d="$HOME/${d#"~/"}" ;; esac
    case "$d" in "$HOME"/*) shown="~/${d#"$HOME"/}" ;; *) shown=$d ;; esac
    if [ -d "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null | head -n 1)" ]; then
        printf 'present\t%s\t%s\n' "$1" "$shown"
    else
        printf 'absent\t%s\t%s\n' "$1" "$shown"
    fi
}
"""

PROBE = (
    "{\n"
    + _LINE
    + "".join(f"gd_one {i} {cache.shell}\n" for i, cache in enumerate(CACHES))
    + "} </dev/null\n"
)
"""Run on each host: where each cache is there, and whether it exists."""


@dataclass(frozen=True)
class Found:
    cache: Cache
    path: str
    present: bool


def parse(text: str) -> dict[str, Found]:
    """The probe's lines by cache name; a line that is not the probe's is ignored (total)."""
    out: dict[str, Found] = {}
    for line in text.splitlines():
        parts = line.split("\t", 2)
        if len(parts) != 3 or parts[0] not in ("present", "absent") or not is_uint(parts[1]):
            continue
        index = int(parts[1])
        path = parts[2].strip()
        if index >= len(CACHES) or not path.startswith(("/", "~/")) or ".." in path.split("/"):
            continue
        if clean_line(path) != path:  # remote text: control or escape characters
            continue
        cache = CACHES[index]
        out[cache.name] = Found(cache, path, parts[0] == "present")
    return out


@dataclass(frozen=True)
class Plan:
    """What a copy with caches does after the main copy: (name, source path, dest path) to
    copy, and the caches the source does not have (said in the log as skipped)."""

    copies: tuple[tuple[str, str, str], ...]
    skipped: tuple[tuple[str, str], ...]


def plan(source: dict[str, Found], dest: dict[str, Found]) -> Plan:
    copies, skipped = [], []
    for cache in CACHES:
        found = source.get(cache.name)
        if found is None or not found.present:
            skipped.append((cache.name, found.path if found else "(not found)"))
            continue
        there = dest.get(cache.name)
        copies.append((cache.name, found.path, there.path if there else found.path))
    return Plan(tuple(copies), tuple(skipped))


def job_name(task: str, cache: str) -> str:
    """The jobs of one cache's copy: `TASK-cache-NAME` (a job dir per copy on each host)."""
    slug = cache.replace(" ", "-")
    return f"{task[:40]}-cache-{slug}"


def prepared_for(
    prepared: Prepared, cache: str, path: str, to: str, params: CopyParams
) -> tuple[Prepared, CopyParams]:
    """The main copy's spec turned into the copy of one cache: its own job name, the cache's
    paths, no fan-out; streams, via and the source address stay the main copy's."""
    spec = dataclasses.replace(
        prepared.spec,
        name=job_name(prepared.spec.name, cache),
        params={**prepared.spec.params, "path": path, "to": to, "caches": False},
    )
    copy = dataclasses.replace(params, path=path, to=to, caches=False, fanout=False)
    return dataclasses.replace(prepared, spec=spec, check=None), copy
