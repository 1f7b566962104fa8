"""The built-in task kinds: their parameters, and the constant shell bodies that read them.

Every body reads its parameters only as quoted variables (`"$GPUDASH_VENV"`); the values are
`export` lines that `gpudash.tasks.render` writes above it. A kind's `check` is a cheap
predicate whose exit 0 means "already done".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpudash.tasks.verify import BODY as VERIFY_BODY


@dataclass(frozen=True)
class Param:
    """One parameter of a kind. `type` names a check in `gpudash.tasks.values.PARAM_TYPES`."""

    type: str
    default: object = None
    required: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Kind:
    name: str
    params: Mapping[str, Param]
    body: str
    check: str | None = None
    affects: tuple[str, ...] = ()
    """Probe sections a finished run changes, for the app to re-probe."""
    needs_facts: bool = False
    """True when a parameter can say "auto" and is chosen from the probe."""
    default_timeout: float = 1800.0
    needs_gpu: bool = False
    """True when the kind cannot work without an NVIDIA GPU and driver: a host whose probe
    saw none is refused up front (`gpudash.tasks.refusals`), before its needs run."""
    builtin_only: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)


_VENV = Param("path", "~/venvs/serve", doc="the venv's directory on the host")

_UV_BODY = r"""
if command -v uv >/dev/null 2>&1; then
    echo "uv is already installed: $(command -v uv)"
    uv --version
    exit 0
fi
PATH="$PATH:$HOME/.local/bin:$HOME/.cargo/bin"  # where pip --user and the installer put uv
gd_pip=
for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -m pip --version >/dev/null 2>&1 || continue
    gd_pip=$py
    echo "installing uv from PyPI with $py -m pip install --user"
    if "$py" -m pip install --user --upgrade uv \
        || "$py" -m pip install --user --upgrade --break-system-packages uv; then
        uv --version && exit 0
    fi
done
if [ -n "$gd_pip" ]; then
    echo "$gd_pip -m pip could not install uv (above): trying the official installer"
else
    echo "no usable pip: using the official installer"
fi
# Fetched to a file first: `curl ... | sh` exits as sh does, so a failed download went on
# to "uv: not found" (rc 127) instead of saying the network was the problem.
gd_installer="${GPUDASH_JOB:-${TMPDIR:-/tmp}}/uv-install.sh"
if command -v curl >/dev/null 2>&1; then
    gd_err=$(curl -LsSf https://astral.sh/uv/install.sh -o "$gd_installer" 2>&1)
elif command -v wget >/dev/null 2>&1; then
    gd_err=$(wget -qO "$gd_installer" https://astral.sh/uv/install.sh 2>&1)
else
    echo "gpudash: cannot install uv: no pip, curl or wget on this host"
    exit 1
fi || {
    echo "gpudash: cannot download https://astral.sh/uv/install.sh:" \
        "$(printf '%s' "$gd_err" | tail -n 1): set https_proxy, or install uv by hand"
    exit 1
}
sh "$gd_installer" || exit
uv --version
"""

_VENV_BODY = r"""
command -v uv >/dev/null 2>&1 || { echo "gpudash: uv not found (run the uv task first)"; exit 127; }
set -- uv venv --allow-existing
if [ -n "$GPUDASH_PYTHON" ]; then set -- "$@" --python "$GPUDASH_PYTHON"; fi
"$@" "$GPUDASH_PATH" || exit
"$GPUDASH_PATH/bin/python" --version
"""

# Packages go through a requirements file: one spec a line, no word splitting anywhere.
_PIP_BODY = r"""
command -v uv >/dev/null 2>&1 || { echo "gpudash: uv not found (run the uv task first)"; exit 127; }
[ -x "$GPUDASH_VENV/bin/python" ] || { echo "gpudash: no venv at $GPUDASH_VENV"; exit 1; }
printf '%s\n' "$GPUDASH_PACKAGES" > "$GPUDASH_JOB/requirements.txt" || exit
set -- uv pip install --python "$GPUDASH_VENV/bin/python" -r "$GPUDASH_JOB/requirements.txt"
if [ -n "${GPUDASH_INDEX_URL:-}" ]; then set -- "$@" --index-url "$GPUDASH_INDEX_URL"; fi
if [ -n "${GPUDASH_FIND_LINKS:-}" ]; then set -- "$@" --find-links "$GPUDASH_FIND_LINKS"; fi
if [ "${GPUDASH_NO_INDEX:-0}" = 1 ]; then set -- "$@" --no-index; fi
if [ -n "${GPUDASH_TORCH_BACKEND:-}" ]; then
    set -- "$@" --torch-backend "$GPUDASH_TORCH_BACKEND"
fi
echo "+ $*"
"$@"
"""

# Every distribution name importable-by-metadata in the venv: "installed, any version".
_HAS_PACKAGES = r"""
[ -x "$GPUDASH_VENV/bin/python" ] || exit 1
"$GPUDASH_VENV/bin/python" -c '
import importlib.metadata as m, os, sys
for name in os.environ["GPUDASH_PACKAGE_NAMES"].split():
    try:
        m.version(name)
    except m.PackageNotFoundError:
        sys.exit(1)
'
"""

_TORCH_CHECK = r"""
[ -x "$GPUDASH_VENV/bin/python" ] || exit 1
"$GPUDASH_VENV/bin/python" -c '
import os, sys
import torch
want = os.environ["GPUDASH_CUDA"]
have = torch.version.cuda
tag = "cpu" if have is None else "cu" + have.replace(".", "")
release = os.environ.get("GPUDASH_TORCH", "").rstrip("*").rstrip(".")
same = not release or (torch.__version__.split("+")[0] + ".").startswith(release + ".")
sys.exit(0 if tag == want and same else 1)
'
"""

_SERVING_CHECK = r"""
[ -x "$GPUDASH_VENV/bin/python" ] || exit 1
"$GPUDASH_VENV/bin/python" -c '
import importlib, os
importlib.import_module(os.environ["GPUDASH_ENGINE"])
'
"""

_PATCH_BODY = r"""
if ! command -v git >/dev/null 2>&1; then
    echo "gpudash: git not found (git apply does the patching)"
    exit 127
fi
SP=$("$GPUDASH_VENV/bin/python" -c '
import importlib, os, sys
module = importlib.import_module(sys.argv[1])
print(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
' "$GPUDASH_MODULE") || {
    echo "gpudash: cannot import $GPUDASH_MODULE with $GPUDASH_VENV/bin/python"
    exit 1
}
cd "$SP" || exit
echo "patching in $SP"
# git looks no further up than here: site-packages inside some repo must not change paths.
GIT_CEILING_DIRECTORIES=$(dirname "$SP")
export GIT_CEILING_DIRECTORIES
rc=0
for p in "$GPUDASH_JOB"/files/*.patch; do
    [ -e "$p" ] || { echo "gpudash: no patch files"; exit 1; }
    n=${p##*/}
    if git apply --reverse --check "$p" >/dev/null 2>&1; then
        echo "$n: already applied, skipped"
    elif git apply --check "$p"; then
        if git apply "$p"; then echo "$n: applied"; else echo "$n: failed"; rc=1; fi
    else
        echo "$n: does not apply"
        rc=1
    fi
done
exit $rc
"""

_MODEL_BODY = r"""
if ! command -v hf >/dev/null 2>&1; then
    echo "gpudash: hf not found (pip install huggingface_hub)"
    exit 127
fi
DEST="$GPUDASH_DIR/$GPUDASH_REPO"
mkdir -p "$DEST" || exit
HFPY=$(sed -n '1s/^#!//p' "$(command -v hf)")
[ -n "$HFPY" ] || HFPY=python3
need=$("$HFPY" -c '
import os
from huggingface_hub import HfApi
info = HfApi().model_info(
    os.environ["GPUDASH_REPO"], revision=os.environ.get("GPUDASH_REVISION") or None,
    files_metadata=True,
)
print(sum(s.size or 0 for s in info.siblings or ()))
') || { echo "gpudash: could not read the size of $GPUDASH_REPO from the Hub"; exit 1; }
# Sizes in KiB as the tools print them, multiplied by the shell: awk's arithmetic prints
# numbers past 2^31 as 8.5e+10 (mawk, Debian's awk), which `[ -gt ]` cannot compare.
have_k=$(du -sk "$DEST" 2>/dev/null | awk '{print $1}')
free_k=$(df -Pk "$DEST" | awk 'NR == 2 {print $4}')
case "${have_k:-0}${free_k:-x}" in
    *[!0-9]*) echo "gpudash: cannot read the free space of $DEST (df printed: $free_k)"; exit 1 ;;
esac
have=$(( ${have_k:-0} * 1024 ))
free=$(( free_k * 1024 ))
echo "repo size $need bytes, already here $have, free $free"
if [ $((need - have)) -gt "$free" ]; then
    gib=1073741824
    echo "gpudash: not enough space in $GPUDASH_DIR:" \
        "need $((need / gib)) GiB, free $((free / gib)) GiB"
    exit 1
fi
set -- hf download "$GPUDASH_REPO" --local-dir "$DEST"
if [ -n "$GPUDASH_REVISION" ]; then set -- "$@" --revision "$GPUDASH_REVISION"; fi
set -f
old_ifs=$IFS
IFS='
'
for pattern in $GPUDASH_INCLUDE; do set -- "$@" --include "$pattern"; done
IFS=$old_ifs
set +f
echo "+ $*"
"$@"
"""

KINDS: Mapping[str, Kind] = {
    "uv": Kind("uv", {}, _UV_BODY, "command -v uv", affects=("env",), default_timeout=600),
    "venv": Kind(
        "venv",
        {"path": _VENV, "python": Param("python", "3.12", doc="Python version; '' = uv's")},
        _VENV_BODY,
        'test -x "$GPUDASH_PATH/bin/python"',
        affects=("env",),
        default_timeout=900,
    ),
    "pip": Kind(
        "pip",
        {
            "venv": _VENV,
            "packages": Param("packages", required=True),
            "index_url": Param("url", ""),
            "find_links": Param("path", ""),
            "no_index": Param("bool", False),
        },
        _PIP_BODY,
        _HAS_PACKAGES,
        affects=("env",),
    ),
    "torch": Kind(
        "torch",
        {
            "venv": _VENV,
            "cuda": Param("cuda", "auto", doc="cuNNN, cpu, or auto (from the probe)"),
            "torch": Param(
                "version", "", doc='torch release, "2.9.*" or "2.9"; "" = the newest that runs'
            ),
            "packages": Param("packages", ["torch"]),
            "index": Param("url", "https://download.pytorch.org/whl"),
        },
        _PIP_BODY,
        _TORCH_CHECK,
        affects=("env",),
        needs_facts=True,
        default_timeout=3600,
    ),
    "serving": Kind(
        "serving",
        {
            "venv": _VENV,
            "engine": Param("engine", "sglang"),
            "version": Param("version", ""),
            "cuda": Param("cuda", "auto"),
        },
        _PIP_BODY,
        _SERVING_CHECK,
        affects=("env",),
        needs_facts=True,
        default_timeout=3600,
    ),
    "patch": Kind(
        "patch",
        {
            "venv": _VENV,
            "module": Param("module", required=True, doc="import name of the patched package"),
            "patches": Param("local_files", required=True, doc=".patch files on this machine"),
        },
        _PATCH_BODY,
        None,
        affects=("env",),
        default_timeout=300,
    ),
    "model": Kind(
        "model",
        {
            "repo": Param("hf_repo", required=True),
            "revision": Param("str", ""),
            "dir": Param("path", "~/models"),
            "include": Param("patterns", []),
            # From a peer instead of the Hub: gpudash/tasks/copy/peer.py (a verified copy)
            "from": Param("host", "", doc="copy the model from this host instead (no download)"),
            "via": Param("str", "direct", doc='with from: "direct" host to host, or "gpudash"'),
            "streams": Param("int", 4, doc="with from: parallel streams of a direct copy"),
            "chunk_mb": Param("int", 256, doc="with from: files above this go as byte ranges"),
            "source_address": Param("str", "", doc="with from: the peer's address as seen"),
            "replace": Param("bool", False, doc="with from: replace a differing copy here"),
        },
        _MODEL_BODY,
        None,
        affects=("models",),
        default_timeout=6 * 3600,
    ),
    # Not a shell body: the copy is two jobs (gpudash/tasks/copy/direct.py) or gpudash streams
    # it (params.via = "gpudash": gpudash/tasks/copy/transfer.py).
    "copy": Kind(
        "copy",
        {
            "from": Param("host", "", doc="the source host (a configured host name)"),
            "path": Param("dir", "~/venvs/serve", doc="the directory to copy, on the source"),
            "to": Param("dir", None, doc="where on the destination; unset: the same path"),
            "replace": Param("bool", False, doc="replace an existing destination directory"),
            "via": Param("str", "direct", doc='"direct" host to host, or "gpudash" through it'),
            "streams": Param("int", 4, doc="parallel streams of a direct copy"),
            "chunk_mb": Param("int", 256, doc="files above this go as byte ranges (MiB)"),
            "source_address": Param("str", "", doc="the source's address as the dest sees it"),
            "fanout": Param(
                "bool",
                True,
                doc="many destinations in one run: fed as one chain (false: each alone)",
            ),
            "caches": Param(
                "bool",
                False,
                doc="also copy the JIT caches the source has (gpudash/tasks/copy/caches.py)",
            ),
        },
        "# copy: two jobs, host to host (gpudash/tasks/copy/direct.py), or via gpudash\n",
        None,
        affects=("env", "models"),
        default_timeout=6 * 3600,
    ),
    # The program (gpudash/tasks/verify/program.py) travels as the job's file; prepare adds it.
    "verify": Kind(
        "verify",
        {
            "venv": _VENV,
            "force": Param("bool", False, doc="measure even when other processes use the GPUs"),
        },
        VERIFY_BODY,
        None,
        affects=("verify",),
        needs_facts=True,  # the GPU count the driver lists, which CUDA's must equal
        needs_gpu=True,  # it measures kernels, NCCL and the engines' imports on the GPUs
        default_timeout=900,
    ),
    "script": Kind("script", {}, "", None, default_timeout=3600),
}

# --- torch wheels for the driver and the GPUs ------------------------------------------------
# Which index fits a host is decided from PyTorch's published build matrix
# (gpudash.checks.stack.choose_torch, in gpudash.tasks.prepare); the tags here are only what a
# `cuda` parameter may name.

TORCH_CUDA_TAGS = ("cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130", "cu132")
