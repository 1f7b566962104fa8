"""The toolkit section: which CUDA compilers, installs, driver and NCCL/cuDNN a host has.

A host often carries several toolkits (`/usr/local/cuda-12.8`, `-13.0`, a wrapper `nvcc` on
PATH, one in a venv), and "which nvcc wins" is what JIT kernels and source builds get, so
every nvcc is listed once per real file with its own `--version`. The driver version comes
from the kernel module (`/proc/driver/nvidia/version`), not nvidia-smi, which the gpus
section already runs. NCCL and cuDNN versions are read from library file names, wheel
dist-info names and headers, never by loading anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gpudash.probe.markdown import md, md_table
from gpudash.probe.parts import Part, text_of
from gpudash.probe.sections.env import VENV_SH
from gpudash.text import clean_line

# Parsers load with the first parse, not with the section: the probe script needs only
# BODY, so the host starts before they load (host_probe.warm_parsers; issue 33 item 10).

NAME = "toolkit"
TIMEOUT = 10.0

_LIBDIRS = (
    "/usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib/sbsa-linux-gnu /usr/lib64"
    " /usr/lib /usr/local/lib /usr/local/cuda*/lib64 /usr/local/cuda*/lib"
    " /usr/local/cuda*/targets/*/lib"
)

BODY = (
    VENV_SH
    + r"""
gd_nvcc_add() {
  if gd_once "$1"; then gd_nvcc_list=$gd_nvcc_list"1	$1	$_gu_r$GD_NL"
  else gd_nvcc_list=$gd_nvcc_list"0	$1	$_gu_r$GD_NL"; fi
}
gd_nvccs() {  # sets gd_nvcc_list: gd_once lines "1|0<TAB>path<TAB>realpath"
  _gu_seen=$GD_NL; gd_nvcc_list=
  _o=$IFS; IFS=:; set -f
  for d in $PATH; do
    IFS=$_o; set +f
    [ -n "$d" ] && [ -x "$d/nvcc" ] && [ ! -d "$d/nvcc" ] && gd_nvcc_add "$d/nvcc"
  done
  IFS=$_o; set +f
  for f in /usr/local/cuda*/bin/nvcc; do [ -x "$f" ] && gd_nvcc_add "$f"; done
  gd_nvcc_list=${gd_nvcc_list%"$GD_NL"}
}
gd_nvcc_one() { printf '%s\t%s\n' "$1" "$2"; "$1" --version </dev/null; }
gd_S='[[:space:]]*'
# version.json's lines joined (as `tr -d '\n'` would), then the "cuda" object's "version".
gd_cuda_json="H;\$!d;x;s/\\n//g;s/.*\"cuda\"$gd_S:$gd_S{[^}]*\"version\"$gd_S:$gd_S\"\\([^\"]*\\)\".*/\\1/p"
gd_cuda() {
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [ -d "$d" ] || continue
    if [ -L "$d" ]; then gd_real "$d"; printf 'link\t%s\t%s\n' "$d" "$_gr"; continue; fi
    printf 'install\t%s\n' "$d"
    [ -x "$d/bin/nvcc" ] && printf 'nvcc\t1\n'
    if [ -f "$d/version.json" ]; then
      printf 'json\t%s\n' "$(sed -n "$gd_cuda_json" "$d/version.json")"
    elif [ -f "$d/version.txt" ]; then
      _l=; { IFS= read -r _l || :; } <"$d/version.txt"
      printf 'txt\t%s\n' "$_l"
    fi
  done
  return 0
}
gd_cat() { while IFS= read -r _l || [ -n "$_l" ]; do printf '%s\n' "$_l"; done <"$1"; }
gd_driver() {
  if [ -r /proc/driver/nvidia/version ]; then gd_cat /proc/driver/nvidia/version
  elif [ -r /sys/module/nvidia/version ]; then
    _l=; { IFS= read -r _l || :; } </sys/module/nvidia/version
    printf 'module %s\n' "$_l"
  else echo "nvidia kernel module: not loaded"; return 1
  fi
}
gd_lib() { gd_once "$1" && printf 'lib\t%s\t%s\n' "$1" "$_gu_r"; return 0; }
gd_wheels() {
  for w in "$1"/nvidia_nccl_cu*-*.dist-info "$1"/nvidia_cudnn_cu*-*.dist-info; do
    [ -d "$w" ] && printf 'wheel\t%s\n' "$w"
  done
  return 0
}
gd_venv_wheels() { for sp in "$1"/lib/python*/site-packages; do gd_wheels "$sp"; done; }
gd_libs() {
  _gl=
  for c in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
    if command -v "$c" >/dev/null 2>&1; then
      _gl=$("$c" -p 2>/dev/null | grep -F -e libnccl.so -e libcudnn.so)
      break
    fi
  done
  _gu_seen=$GD_NL
  while IFS= read -r _p; do _p=${_p##*=> }; [ -n "$_p" ] && gd_lib "$_p"; done <<GD_EOF
$_gl
GD_EOF
  for d in """
    + _LIBDIRS
    + r"""; do
    # One pattern, so each (often large) library folder is read once, not twice.
    for f in "$d"/lib[nc][cu][cd][ln]*.so.*; do
      case ${f##*/} in libnccl.so.*|libcudnn.so.*) [ -e "$f" ] && gd_lib "$f" ;; esac
    done
  done
  gd_each_venv gd_venv_wheels
  for sp in /usr/lib/python3*/dist-packages /usr/local/lib/python3*/dist-packages \
      /usr/local/lib/python3*/site-packages "$HOME"/.local/lib/python3*/site-packages; do
    gd_wheels "$sp"
  done
  for h in /usr/include/cudnn_version*.h /usr/include/*/cudnn_version*.h \
      /usr/local/cuda*/include/cudnn_version.h /usr/include/nccl.h \
      /usr/local/cuda*/include/nccl.h; do
    [ -f "$h" ] || continue
    printf 'header\t%s\n' "$h"
    grep -E "^#define$gd_S(CUDNN|NCCL)_(MAJOR|MINOR|PATCHLEVEL|PATCH)[^A-Z_]" "$h" |
      while IFS= read -r l; do printf 'define\t%s\n' "$l"; done
  done
  return 0
}
gd_nvccs
part nvccs printf '%s\n' "$gd_nvcc_list"
gd_i=0
while IFS='	' read -r gd_first gd_p gd_r; do
  [ "$gd_first" = 1 ] || continue
  gd_i=$((gd_i + 1))
  part "nvcc.$gd_i" gd_nvcc_one "$gd_p" "$gd_r" </dev/null
done <<GD_EOF
$gd_nvcc_list
GD_EOF
part cuda gd_cuda
part driver gd_driver
part libs gd_libs
"""
)


@dataclass(frozen=True)
class Nvcc:
    path: str
    release: str | None  # "13.0"
    version: str | None  # "13.0.88"
    build: str | None
    realpath: str | None = None
    aliases: tuple[str, ...] = ()  # other paths of the same file
    error: str | None = None  # why no version: e.g. a wrapper whose target is gone


@dataclass(frozen=True)
class CudaInstall:
    path: str
    version: str | None  # "13.0.2" from version.json, version.txt or the directory name
    version_source: str | None = None  # "version.json", "version.txt" or "name"
    has_nvcc: bool = False
    aliases: tuple[str, ...] = ()  # symlinks to it, e.g. /usr/local/cuda-13


@dataclass(frozen=True)
class Lib:
    name: str  # "libnccl.so.2.28.3", "nvidia-nccl-cu13", "cudnn_version.h"
    version: str | None
    source: str  # "library", "wheel" or "header"
    path: str


@dataclass(frozen=True)
class Toolkit:
    nvcc: tuple[Nvcc, ...] = ()
    cuda_installs: tuple[CudaInstall, ...] = ()
    cuda_symlink: str | None = None  # where /usr/local/cuda points, when it is a link
    driver_version: str | None = None  # kernel module version, e.g. "580.159.04"
    nccl: tuple[Lib, ...] = ()
    cudnn: tuple[Lib, ...] = ()
    notes: tuple[str, ...] = ()


def parse(parts: Mapping[str, Part]) -> Toolkit:
    notes: list[str] = []
    nvccs = _nvccs(parts, notes)
    installs, symlink = _cuda(text_of(parts, "cuda"))
    driver = _driver(text_of(parts, "driver"))
    if driver is None:
        said = clean_line(text_of(parts, "driver").strip()[:160])
        notes.append(f"driver version: {said or 'not read'}")
    libs = _libs(text_of(parts, "libs"))
    return Toolkit(
        nvcc=nvccs,
        cuda_installs=installs,
        cuda_symlink=symlink,
        driver_version=driver,
        nccl=tuple(lib for kind, lib in libs if kind == "nccl"),
        cudnn=tuple(lib for kind, lib in libs if kind == "cudnn"),
        notes=tuple(notes),
    )


def _clean(value: str | None) -> str | None:
    return (clean_line(value).strip()[:400] or None) if value else None


def _records(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines() if "\t" in line]


def _nvccs(parts: Mapping[str, Part], notes: list[str]) -> tuple[Nvcc, ...]:
    from gpudash.probe.nvcc import parse_nvcc

    aliases: dict[str, list[str]] = {}
    for rec in _records(text_of(parts, "nvccs")):
        if len(rec) >= 3 and rec[0] == "0":
            aliases.setdefault(rec[2], []).append(_clean(rec[1]) or "?")
    out = []
    numbered = sorted(
        (int(n[5:]), p) for n, p in parts.items() if re.fullmatch(r"nvcc\.\d{1,6}", n)
    )
    for _, part in numbered:
        head, _, rest = part.text.partition("\n")
        path, _, real = head.partition("\t")
        v = parse_nvcc(rest)
        error = None
        if v.release is None:
            error = _clean(rest.strip().splitlines()[-1][:200] if rest.strip() else "no output")
        out.append(
            Nvcc(
                path=_clean(path) or "?",
                release=v.release,
                version=v.version,
                build=v.build,
                realpath=_clean(real),
                aliases=tuple(aliases.get(real, ())),
                error=error,
            )
        )
    if "nvccs" in parts and not out:
        notes.append("nvcc: not found (not on PATH nor in /usr/local/cuda*/bin)")
    return tuple(out)


def _cuda(text: str) -> tuple[tuple[CudaInstall, ...], str | None]:
    installs: list[CudaInstall] = []
    links: dict[str, list[str]] = {}
    symlink = None
    for rec in _records(text):
        kind, value = rec[0], "\t".join(rec[1:])
        if kind == "link" and len(rec) >= 3:
            links.setdefault(rec[2], []).append(_clean(rec[1]) or "?")
            if rec[1] == "/usr/local/cuda":
                symlink = _clean(rec[2])
        elif kind == "install":
            m = re.search(r"cuda-(\d+(?:\.\d+)*)$", value)
            installs.append(
                CudaInstall(
                    _clean(value) or "?",
                    m.group(1) if m else None,
                    "name" if m else None,
                )
            )
        elif installs and kind == "nvcc":
            installs[-1] = replace(installs[-1], has_nvcc=True)
        elif installs and kind in ("json", "txt"):
            m = re.search(r"(\d+\.\d+(?:\.\d+)*)", value)
            if m:
                source = "version.json" if kind == "json" else "version.txt"
                installs[-1] = replace(installs[-1], version=m.group(1), version_source=source)
    final = tuple(replace(i, aliases=tuple(links.get(i.path, ()))) for i in installs)
    return final, symlink


def _driver(text: str) -> str | None:
    m = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    m = m or re.match(r"\s*module\s+(\d+\.\d+(?:\.\d+)?)\s*$", text)
    return m.group(1) if m else None


def _libs(text: str) -> list[tuple[str, Lib]]:
    out: list[tuple[str, Lib]] = []
    header: tuple[str, str] | None = None
    defines: dict[str, str] = {}

    def flush() -> None:
        if header is None:
            return
        kind, path = header
        key = ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")
        if kind == "nccl":
            key = ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")
        parts = [defines.get(k) for k in key]
        version = ".".join(p for p in parts if p) if parts[0] else None
        out.append((kind, Lib(path.rsplit("/", 1)[-1], version, "header", path)))

    for rec in _records(text):
        kind, value = rec[0], rec[-1]
        if kind == "lib" and len(rec) >= 3:
            base = value.rsplit("/", 1)[-1]
            m = re.match(r"lib(nccl|cudnn)\.so((?:\.\d+){1,4})$", base)
            if m:
                lib = Lib(_clean(base) or "?", m.group(2)[1:], "library", _clean(value) or "?")
                out.append((m.group(1), lib))
        elif kind == "wheel":
            m = re.search(r"/(nvidia_(nccl|cudnn)_cu\d+)-([^/]+)\.dist-info$", value)
            if m:
                name = m.group(1).replace("_", "-")
                out.append(
                    (m.group(2), Lib(name, _clean(m.group(3)), "wheel", _clean(value) or "?"))
                )
        elif kind == "header":
            flush()
            header = ("nccl" if value.endswith("nccl.h") else "cudnn", _clean(value) or "?")
            defines = {}
        elif kind == "define" and header is not None:
            m = re.match(r"#define\s+(\w+)\s+(\d{1,6})\b", value)
            if m:
                defines[m.group(1)] = m.group(2)
    flush()
    return out


def summary(data: Toolkit) -> str:
    """The one line `gpudash probe` prints for this section."""
    bits = [
        ", ".join(f"nvcc {n.version or n.release or '?'} ({n.path})" for n in data.nvcc)
        or "nvcc: not found"
    ]
    if data.cuda_symlink:
        bits.append(f"/usr/local/cuda → {data.cuda_symlink}")
    if data.nccl:
        bits.append("NCCL " + ", ".join(sorted({lib.version or "?" for lib in data.nccl})))
    if data.cudnn:
        bits.append("cuDNN " + ", ".join(sorted({lib.version or "?" for lib in data.cudnn})))
    return " · ".join(bits)


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "Toolkit"


def report(k: Toolkit) -> list[str]:
    lines = []
    if k.nvcc:
        rows: list[Sequence[object]] = [
            (n.path, n.version or n.release or n.error, ", ".join(n.aliases)) for n in k.nvcc
        ]
        lines += md_table(["nvcc (first wins on PATH)", "Version", "Also as"], rows)
    else:
        lines.append("No nvcc found.")
    if k.cuda_installs:
        lines.append("")
        rows = [
            (i.path, i.version, "yes" if i.has_nvcc else "no", ", ".join(i.aliases))
            for i in k.cuda_installs
        ]
        lines += md_table(["CUDA install", "Version", "nvcc", "Links"], rows)
    lines.append("")
    lines.append(
        f"/usr/local/cuda -> {md(k.cuda_symlink or 'not a link')}; kernel module driver "
        f"{md(k.driver_version)}."
    )
    libs = [*k.nccl, *k.cudnn]
    if libs:
        lines.append("")
        lines += md_table(
            ["Library", "Version", "From", "Path"],
            [(lib.name, lib.version, lib.source, lib.path) for lib in libs],
        )
    return lines
