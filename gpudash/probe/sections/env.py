"""The env section: which Pythons, package tools and virtual environments a host has.

Everything is read from the file system, never by importing or running pip: `python -m pip
--version` costs 0.3-0.8 s and `import torch` about 4 s, while a package's version is already
in its `NAME-VERSION.dist-info` directory name and torch's CUDA build in `torch/version.py`.
Only `python --version`, `uv --version` and `micromamba --version` run (a few ms each); conda
and mamba 1 are Python programs, so their versions come from `conda-meta/*.json` file names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from gpudash.probe.markdown import md, md_table
from gpudash.probe.parts import Part, text_of
from gpudash.text import clean_line
from gpudash.versions import local_cuda, short

NAME = "env"
TIMEOUT = 10.0

# Distributions whose versions each venv reports (dist-info names use "_" for "-").
DISTS = (
    "torch", "torchvision", "sglang", "sgl-kernel", "vllm", "flashinfer", "flashinfer-python",
    "flashinfer-cubin", "flashinfer-jit-cache", "transformers", "triton", "pytorch-triton",
    "xformers", "flash-attn", "huggingface-hub", "nvidia-ml-py", "pip", "uv",
)  # fmt: skip
_DIST_CASE = "|".join(f"{d.replace('-', '_')}-*" for d in DISTS)

# Shared with the toolkit and models sections: where environments are, and how to list paths
# once each. Every helper here stays in the section's own shell (builtins, no pipes): on a
# host probed by many users each fork and exec is CPU the probe takes from the host.
VENV_SH = r"""
# gd_real PATH  set _gr to PATH with every link resolved, as `readlink -f` prints it ("" when
# it cannot be resolved). Folders resolve with the `cd -P` builtin; only a link to a file
# costs a readlink.
gd_real() {
  case ${gd_linkmap:-} in
    *"$GD_NL$1	"*) _gr=${gd_linkmap#*"$GD_NL$1	"}; _gr=${_gr%%"$GD_NL"*}; return 0 ;;
  esac
  _gr=; _gr_w=$PWD
  case $1 in /*) _gr_p=$1 ;; *) _gr_p=./$1 ;; esac
  if [ -d "$_gr_p" ]; then
    cd -P "$_gr_p" 2>/dev/null && { _gr=$PWD; cd "$_gr_w" 2>/dev/null; }
  elif [ -L "$_gr_p" ]; then _gr=$(readlink -f "$_gr_p" 2>/dev/null)
  else
    case $_gr_p in
      */) _gr=$(readlink -f "$_gr_p" 2>/dev/null) ;;
      *) _gr_d=${_gr_p%/*}
         cd -P "${_gr_d:-/}" 2>/dev/null &&
           { _gr=${PWD%/}/${_gr_p##*/}; cd "$_gr_w" 2>/dev/null; } ;;
    esac
  fi
  return 0
}
# gd_links PATH...  resolve the links to files among PATHs with one `readlink -f` (GNU's takes
# many paths; where it takes one, or one fails, gd_real resolves each on its own).
gd_links() {
  for _p; do shift; [ -L "$_p" ] && [ ! -d "$_p" ] && set -- "$@" "$_p"; done
  [ $# -gt 1 ] || return 0
  _gl_o=$(readlink -f -- "$@" 2>/dev/null) || return 0
  _gl_r=$_gl_o$GD_NL; _gl_n=0
  while [ -n "$_gl_r" ]; do _gl_n=$((_gl_n + 1)); _gl_r=${_gl_r#*"$GD_NL"}; done
  [ "$_gl_n" -eq $# ] || return 0
  _gl_r=$_gl_o$GD_NL; gd_linkmap=${gd_linkmap:-$GD_NL}
  for _p; do gd_linkmap=$gd_linkmap$_p"	"${_gl_r%%"$GD_NL"*}$GD_NL; _gl_r=${_gl_r#*"$GD_NL"}; done
}
# gd_once PATH  true the first time PATH's real path (then in _gu_r) is seen since _gu_seen
# was last set to $GD_NL.
gd_once() {
  gd_real "$1"; _gu_r=${_gr:-$1}
  case $_gu_seen in *"$GD_NL$_gu_r$GD_NL"*) return 1 ;; esac
  _gu_seen=$_gu_seen$_gu_r$GD_NL
}
# gd_each_venv FUNC  FUNC PATH for each environment (pyvenv.cfg or conda-meta), once each.
gd_each_venv() {
  gd_ev_fn=$1; _gu_seen=$GD_NL
  [ -n "${VIRTUAL_ENV:-}" ] && gd_venv_at "$VIRTUAL_ENV"
  [ -n "${CONDA_PREFIX:-}" ] && gd_venv_at "$CONDA_PREFIX"
  while IFS= read -r _gp; do [ -n "$_gp" ] && gd_expand "$_gp" gd_venv_at; done <<GD_EOF
${GPUDASH_VENV_PATHS:-}
GD_EOF
  return 0
}
gd_venv_at() {
  { [ -f "$1/pyvenv.cfg" ] || [ -d "$1/conda-meta" ]; } && gd_once "$1" &&
    "$gd_ev_fn" "$1" </dev/null
  return 0
}
"""

BODY = (
    VENV_SH
    + r"""
gd_py_add() {
  if gd_once "$1"; then gd_py_list=$gd_py_list"1	$1	$_gu_r$GD_NL"
  else gd_py_list=$gd_py_list"0	$1	$_gu_r$GD_NL"; fi
}
gd_pythons() {
  _gu_seen=$GD_NL; gd_py_list=
  set --
  _o=$IFS; IFS=:; set -f
  for d in $PATH; do
    IFS=$_o; set +f
    [ -n "$d" ] || continue
    for f in "$d"/python3 "$d"/python3.[0-9]* "$d"/python; do
      case ${f##*/} in python|python3|python3.[0-9]|python3.[0-9][0-9]) ;; *) continue ;; esac
      [ -x "$f" ] && [ ! -d "$f" ] && set -- "$@" "$f"
    done
  done
  IFS=$_o; set +f
  gd_links "$@"
  for f; do gd_py_add "$f"; done
  # --version runs in parallel: pyenv shims and cold disks make one take 100 ms or more.
  # Each job prints one short line "N<TAB>first line of its output", cut to 200 bytes so
  # that every job's line is one atomic pipe write (a hostile 1 MB line cannot interleave).
  _vs=$GD_NL$(
    _n=0
    while IFS='	' read -r first p r; do
      [ -n "$first" ] || continue
      _n=$((_n + 1))
      [ "$first" = 1 ] || continue
      { _v=$("$p" --version </dev/null 2>&1); printf '%s\t%.200s\n' "$_n" "${_v%%"$GD_NL"*}"; } &
    done <<GD_EOF
$gd_py_list
GD_EOF
    wait)
  _n=0
  while IFS='	' read -r first p r; do
    [ -n "$first" ] || continue
    _n=$((_n + 1))
    printf 'python\t%s\t%s\n' "$p" "$r"
    case $_vs in
      *"$GD_NL$_n	"*) _v=${_vs#*"$GD_NL$_n	"}; printf 'version\t%s\n' "${_v%%"$GD_NL"*}" ;;
    esac
  done <<GD_EOF
$gd_py_list
GD_EOF
}
gd_pip() {
  _gu_seen=$GD_NL
  for f in /usr/lib/python3*/dist-packages/pip-*.dist-info \
      /usr/lib/python3*/site-packages/pip-*.dist-info \
      /usr/local/lib/python3*/dist-packages/pip-*.dist-info \
      /usr/local/lib/python3*/site-packages/pip-*.dist-info \
      "$HOME"/.local/lib/python3*/site-packages/pip-*.dist-info; do
    [ -d "$f" ] && gd_once "$f" && printf '1\t%s\t%s\n' "$f" "$_gu_r"
  done
  return 0
}
# gd_which NAME  set _gw to NAME's path as `command -v` finds it; "" unless that is absolute.
gd_which() {
  _gw=; _o=$IFS; IFS=:; set -f
  for _d in $PATH; do
    [ -f "${_d:-.}/$1" ] && [ -x "${_d:-.}/$1" ] || continue
    case $_d in /*) _gw=$_d/$1 ;; esac
    break
  done
  IFS=$_o; set +f
}
gd_tool() {  # NAME CANDIDATE...: first executable on PATH or at a usual place
  _t=$1; shift
  gd_which "$_t"; _p=$_gw
  for _c in "$@"; do [ -z "$_p" ] && [ -x "$_c" ] && _p=$_c; done
  [ -n "$_p" ] || { printf 'tool\t%s\t\n' "$_t"; return 0; }
  printf 'tool\t%s\t%s\n' "$_t" "$_p"
  case $_t in
    uv|micromamba) _v=$("$_p" --version </dev/null 2>&1)
       printf 'version\t%s\n' "${_v%%"$GD_NL"*}" ;;
    *) gd_real "$_p"; _r=${_gr:-$_p}
       for _j in "${_r%/*}"/../conda-meta/"$_t"-[0-9]*.json; do
         [ -f "$_j" ] && printf 'meta\t%s\n' "${_j##*/}"
       done ;;
  esac
}
gd_tools() {
  gd_tool uv "$HOME/.local/bin/uv" "$HOME/.cargo/bin/uv"
  for t in conda mamba micromamba; do
    gd_tool "$t" "$HOME/miniforge3/bin/$t" "$HOME/miniconda3/bin/$t" \
      "$HOME/anaconda3/bin/$t" "/opt/conda/bin/$t" "$HOME/.local/bin/$t"
  done
}
gd_vars() {
  printf 'VIRTUAL_ENV=%s\nCONDA_PREFIX=%s\nCONDA_DEFAULT_ENV=%s\n' \
    "${VIRTUAL_ENV:-}" "${CONDA_PREFIX:-}" "${CONDA_DEFAULT_ENV:-}"
}
gd_venv() {
  printf 'venv\t%s\n' "$1"
  if [ -d "$1/conda-meta" ]; then
    printf 'kind\tconda\n'
    for j in "$1"/conda-meta/python-[0-9]*.json; do
      [ -f "$j" ] && printf 'condapy\t%s\n' "${j##*/}"
    done
  fi
  [ -f "$1/pyvenv.cfg" ] && while IFS= read -r l || [ -n "$l" ]; do
    printf 'cfg\t%s\n' "$l"
  done <"$1/pyvenv.cfg"
  for sp in "$1"/lib/python*/site-packages; do
    [ -d "$sp" ] || continue
    printf 'site\t%s\n' "$sp"
    for di in "$sp"/*.dist-info "$sp"/*.egg-info; do
      b=${di##*/}
      case $b in """
    + _DIST_CASE
    + r""") printf 'dist\t%s\n' "$b" ;; esac
    done
    [ -f "$sp/torch/version.py" ] && while IFS= read -r l || [ -n "$l" ]; do
      case $l in cuda[!A-Za-z0-9_]*|hip[!A-Za-z0-9_]*) printf 'torchpy\t%s\n' "$l" ;; esac
    done <"$sp/torch/version.py"
  done
  return 0
}
gd_venvs() { gd_each_venv gd_venv; }
part pythons gd_pythons
part pip gd_pip
part tools gd_tools
part vars gd_vars
part venvs gd_venvs
"""
)


@dataclass(frozen=True)
class Python:
    path: str
    realpath: str
    version: str | None  # "3.12.3"
    aliases: tuple[str, ...] = ()  # other PATH names for the same executable
    pip: str | None = None  # pip version importable by it, from dist-info
    error: str | None = None  # what `--version` said instead of a version


@dataclass(frozen=True)
class Pip:
    path: str  # the pip-X.dist-info directory
    version: str


@dataclass(frozen=True)
class Tool:
    name: str
    path: str | None  # None: not found
    version: str | None = None


@dataclass(frozen=True)
class Venv:
    path: str
    python: str | None
    packages: dict[str, str] = field(default_factory=dict)
    torch_cuda: str | None = None  # "13.0"; None for CPU builds or no torch
    kind: str = "venv"  # "venv" or "conda"


@dataclass(frozen=True)
class Env:
    pythons: tuple[Python, ...] = ()
    pip: tuple[Pip, ...] = ()
    uv: Tool | None = None  # None: not found
    conda: tuple[Tool, ...] = ()  # conda, mamba, micromamba that were found
    virtual_env: str | None = None
    conda_prefix: str | None = None
    venvs: tuple[Venv, ...] = ()
    notes: tuple[str, ...] = ()


def parse(parts: Mapping[str, Part]) -> Env:
    notes = [f"{n}: cut off" for n in ("pythons", "venvs") if n in parts and parts[n].rc is None]
    notes += [f"{n}: not run" for n in ("pythons", "pip", "tools", "venvs") if n not in parts]
    pips = tuple(_pips(text_of(parts, "pip")))
    pythons = tuple(_with_pip(p, pips) for p in _pythons(text_of(parts, "pythons")))
    if "pythons" in parts and not pythons:
        notes.append("no python3 or python on PATH")
    tools = _tools(text_of(parts, "tools"))
    env_vars = dict(
        line.split("=", 1) for line in text_of(parts, "vars").splitlines() if "=" in line
    )
    return Env(
        pythons=pythons,
        pip=pips,
        uv=tools["uv"] if "uv" in tools and tools["uv"].path else None,
        conda=tuple(t for n, t in tools.items() if n != "uv" and t.path),
        virtual_env=_clean(env_vars.get("VIRTUAL_ENV")),
        conda_prefix=_clean(env_vars.get("CONDA_PREFIX")),
        venvs=tuple(_venvs(text_of(parts, "venvs"))),
        notes=tuple(notes),
    )


def _records(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines() if "\t" in line]


def _clean(value: str | None) -> str | None:
    return (clean_line(value).strip()[:400] or None) if value else None


def _pythons(text: str) -> list[Python]:
    by_real: dict[str, Python] = {}
    last: str | None = None
    for rec in _records(text):
        if rec[0] == "python" and len(rec) >= 3:
            path, real = _clean(rec[1]) or "?", _clean(rec[2]) or "?"
            if real in by_real:
                old = by_real[real]
                by_real[real] = replace(old, aliases=(*old.aliases, path))
                last = None
            else:
                by_real[real], last = Python(path, real, None), real
        elif rec[0] == "version" and last is not None:
            old = by_real[last]
            m = re.match(r"\s*Python\s+(\d\S*)", rec[1])
            version, error = (_clean(m.group(1)), None) if m else (None, _clean(rec[1][:200]))
            by_real[last] = Python(old.path, old.realpath, version, error=error)
    return list(by_real.values())


def _pips(text: str) -> list[Pip]:
    out = []
    for rec in _records(text):
        m = re.search(r"/pip-([^/]+)\.dist-info$", rec[1] if len(rec) > 1 else "")
        if m:
            out.append(Pip(_clean(rec[1]) or "?", _clean(m.group(1)) or "?"))
    return out


def _with_pip(py: Python, pips: tuple[Pip, ...]) -> Python:
    """The pip this Python would import: in its own prefix, or the system dirs for /usr."""
    minor = ".".join((py.version or "").split(".")[:2])
    for path in (py.path, *py.aliases, py.realpath):
        prefix = str(PurePosixPath(path).parent.parent)
        for pip in pips:
            lib = re.search(r"/lib/python(3(?:\.\d+)?)/", pip.path)
            if lib and "." in lib.group(1) and minor and lib.group(1) != minor:
                continue
            own = pip.path.startswith(prefix.rstrip("/") + "/lib/")
            system = prefix in ("/usr", "/") and pip.path.startswith(("/usr/", "/lib/"))
            if own or system:
                return replace(py, pip=pip.version)
    return py


def _tools(text: str) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    name: str | None = None
    for rec in _records(text):
        if rec[0] == "tool" and len(rec) >= 3 and rec[1]:
            name = clean_line(rec[1])[:40]
            tools[name] = Tool(name, _clean(rec[2]))
        elif name in tools and rec[0] in ("version", "meta"):
            # meta: conda-24.7.1-py312_0.json; version: "uv 0.9.5 (d5f3933 2025-10-21)"
            pattern = r"-(\d[^-]*)-" if rec[0] == "meta" else r"^(?:\S+\s+)?v?(\d+\.[\w.+-]+)"
            found = re.search(pattern, rec[1])
            tools[name] = replace(tools[name], version=_clean(found.group(1)) if found else None)
    return tools


def _venvs(text: str) -> list[Venv]:
    out: list[Venv] = []
    for block in re.split(r"^(?=venv\t)", text, flags=re.M):
        recs = [(r[0], "\t".join(r[1:])) for r in _records(block)]
        if not recs or recs[0][0] != "venv":
            continue

        def found(kind: str, pattern: str, recs: list[tuple[str, str]] = recs) -> str | None:
            hits = (re.search(pattern, v) for k, v in recs if k == kind)
            return next((m.group(1) for m in hits if m), None)

        packages: dict[str, str] = {}
        for name, version in filter(None, (_dist(v) for k, v in recs if k == "dist")):
            packages.setdefault(name, version)
        python = (  # pyvenv.cfg `version` or `version_info = 3.12.3.final.0`; conda; lib dir
            found("cfg", r"^\s*version(?:_info)?\s*=\s*(\d+\.\d+(?:\.\d+)?)")
            or found("condapy", r"^python-(\d[^-]*)-")
            or found("site", r"/lib/python(\d+\.\d+)[^/]*/site-packages$")
        )
        torch_cuda = found("torchpy", r"^cuda\b[^=]*=\s*['\"]([\d.]+)['\"]")
        out.append(
            Venv(
                path=_clean(recs[0][1]) or "?",
                python=_clean(python),
                packages=packages,
                torch_cuda=_clean(torch_cuda) or _cuda_from_local(packages.get("torch")),
                kind="conda" if ("kind", "conda") in recs else "venv",
            )
        )
    return out


def _dist(dirname: str) -> tuple[str, str] | None:
    """`torch-2.11.0+cu130.dist-info` -> ("torch", "2.11.0+cu130"); egg-info alike."""
    m = re.match(r"^([A-Za-z0-9_.]+?)-(\d[^-]*?)(?:-py[\d.]+)?\.(?:dist|egg)-info$", dirname)
    if not m:
        return None
    name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    return clean_line(name)[:60], clean_line(m.group(2))[:60]


def _cuda_from_local(version: str | None) -> str | None:
    cuda = local_cuda(version)
    return short(cuda) if cuda else None


def summary(data: Env) -> str:
    """The one line `gpudash probe` prints for this section."""
    python = next((p.version for p in data.pythons if p.version), None)
    bits = [f"python {python}" if python else "python3: not found"]
    bits.append(f"uv {data.uv.version or '?'}" if data.uv else "uv: not found")
    venvs = [
        f"{v.path} (torch {v.packages['torch']})" if "torch" in v.packages else v.path
        for v in data.venvs
    ]
    bits.append("venvs: " + ", ".join(venvs) if venvs else "no venv")
    return " · ".join(bits)


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "Env"


def report(e: Env) -> list[str]:
    lines = []
    if e.pythons:
        rows: list[Sequence[object]] = [(p.path, p.version or p.error, p.pip) for p in e.pythons]
        lines += md_table(["Python", "Version", "pip"], rows)
    else:
        lines.append("No python on PATH.")
    lines.append("")
    uv = f"uv {md(e.uv.version)} at {md(e.uv.path)}" if e.uv else "no uv"
    conda = ", ".join(f"{md(t.name)} {md(t.version)}" for t in e.conda)
    lines.append(f"{uv}{'; ' + conda if conda else ''}.")
    lines.append("")
    if e.venvs:
        rows = []
        for v in e.venvs:
            others = ", ".join(f"{p} {v.packages[p]}" for p in _SHOWN_PACKAGES if p in v.packages)
            rows.append(
                (
                    v.path,
                    v.kind,
                    v.python,
                    v.packages.get("torch", "none"),
                    v.torch_cuda or "",
                    others,
                )
            )
        lines += md_table(["Venv", "Kind", "Python", "torch", "torch CUDA", "Serving stack"], rows)
    else:
        lines.append("No venvs found.")
    return lines


_SHOWN_PACKAGES = ("sglang", "vllm", "flashinfer-python", "transformers", "triton")
