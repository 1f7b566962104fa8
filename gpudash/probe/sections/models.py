"""The models section: which model weights are on a host, whether they are whole, and room.

"Is the model there and complete?" is the question before any launch, and a half-finished
download is the usual answer to a confusing load error, so each model folder reports its
size, whether `config.json` is present and which shards its `*.index.json` weight map names
but the folder lacks. Hugging Face hub cache entries (`models--ORG--NAME/snapshots/REV/`,
files symlinked into `../../blobs/`) are reported as "ORG/NAME" and sized by their blobs.
Shard names come from the index with `grep -o`; nothing runs Python on the host.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gpudash.probe.markdown import md_table
from gpudash.probe.parts import Part, text_of
from gpudash.probe.sections.env import VENV_SH
from gpudash.text import clean_line, is_uint
from gpudash.units import human_bytes

NAME = "models"
TIMEOUT = 20.0
MISSING_CAP = 20  # shard names listed per model; the count is always whole

BODY = (
    VENV_SH
    + r"""
gd_model_add() { gd_mfound=1; gd_once "$1" && gd_dirs=$gd_dirs$1$GD_NL; return 0; }
gd_model_dirs() {  # sets gd_dirs: the configured model dirs and the hub cache, once each
  gd_dirs=; _gu_seen=$GD_NL
  while IFS= read -r p; do
    [ -n "$p" ] || continue
    gd_mfound=; gd_expand "$p" gd_model_add
    [ -n "$gd_mfound" ] && continue
    case $p in "~") p=$HOME ;; "~/"*) p=$HOME/${p#"~/"} ;; esac
    gd_model_add "$p"
  done <<GD_EOF
${GPUDASH_MODEL_DIRS:-}
GD_EOF
  if [ -n "${HF_HUB_CACHE:-}" ]; then gd_model_add "$HF_HUB_CACHE"
  elif [ -n "${HF_HOME:-}" ]; then gd_model_add "$HF_HOME/hub"; fi
  gd_dirs=${gd_dirs%"$GD_NL"}
}
gd_is_model() {
  [ -e "$1/config.json" ] && return 0
  for f in "$1"/*.safetensors "$1"/*.gguf "$1"/*.bin "$1"/*.index.json; do
    [ -e "$f" ] && return 0
  done
  return 1
}
# gd_model NAME PATH SIZE_PATH DU_FLAGS: one model folder's records.
gd_model() {
  printf 'model\t%s\t%s\n' "$1" "$2"
  [ -e "$2/config.json" ] && printf 'config\t1\n'
  for f in "$2"/*.safetensors "$2"/*.bin "$2"/*.gguf "$2"/*.pt "$2"/*.pth; do
    [ -e "$f" ] && { printf 'weights\t1\n'; break; }
  done
  _k=$(du -s"$4"k "$3" 2>/dev/null)
  printf 'size\t%s\n' "${_k%%[!0-9]*}"
  for ix in "$2"/*.index.json; do
    [ -f "$ix" ] || continue
    printf 'index\t%s\n' "${ix##*/}"
    grep -o -E '"[^"]*\.(safetensors|bin)"' "$ix" | tr -d '"' | sort -u | {
      _n=0; _miss=0
      while IFS= read -r s; do
        _n=$((_n + 1))
        [ -e "$2/$s" ] && continue
        _miss=$((_miss + 1))
        [ "$_miss" -le @CAP@ ] && printf 'missing\t%s\n' "$s"
      done
      printf 'shards\t%s\t%s\n' "$_n" "$_miss"
    }
  done
}
gd_dir() {
  [ -d "$1" ] || { printf 'dir\t%s\t0\n' "$1"; return 0; }
  printf 'dir\t%s\t1\n' "$1"
  for e in "$1"/*; do
    [ -d "$e" ] || continue
    b=${e##*/}
    case $b in
      datasets--*|spaces--*) ;;
      models--*)
        _s=0; for s in "$e"/snapshots/*; do [ -d "$s" ] && _s=$((_s + 1)); done
        if [ "$_s" -eq 0 ]; then
          # No snapshot and no blob: the Hub client's note of a revision (refs/, which
          # `hf download --local-dir` writes too), not a download. With blobs: one begun.
          for f in "$e"/blobs/*; do
            [ -e "$f" ] && { printf 'model\t%s\t%s\nnosnapshot\t1\n' "$b" "$e"; break; }
          done
          continue
        fi
        _inc=0; for f in "$e"/blobs/*.incomplete; do [ -e "$f" ] && _inc=$((_inc + 1)); done
        for s in "$e"/snapshots/*; do
          [ -d "$s" ] || continue
          # one revision: its blobs are its size; several: follow its links (du -L counts a
          # blob once even when two names point to it).
          if [ "$_s" -eq 1 ] && [ -d "$e/blobs" ]; then gd_model "$b" "$s" "$e/blobs" ""
          else gd_model "$b" "$s" "$s" L; fi
          printf 'rev\t%s\npartial\t%s\n' "${s##*/}" "$_inc"
        done ;;
      *)
        if gd_is_model "$e"; then gd_model "$b" "$e" "$e" L; continue; fi
        _found=0
        for s in "$e"/*; do
          [ -d "$s" ] && gd_is_model "$s" && { gd_model "$b/${s##*/}" "$s" "$s" L; _found=1; }
        done
        [ "$_found" = 1 ] || gd_model "$b" "$e" "$e" L ;;
    esac
  done
  return 0
}
# gd_df: one `df` for every folder when it answers one line each, else one per folder.
gd_df() {
  set --
  while IFS= read -r p; do [ -d "$p" ] && set -- "$@" "$p"; done <<GD_EOF
$gd_dirs
/
${HOME:-}
GD_EOF
  [ $# -gt 0 ] || return 0
  _o=$(df -Pk "$@" 2>&1) && {
    _n=0; _rest=$_o$GD_NL
    while [ -n "$_rest" ]; do _n=$((_n + 1)); _rest=${_rest#*"$GD_NL"}; done
    if [ "$_n" -eq $(($# + 1)) ]; then
      _rest=${_o#*"$GD_NL"}$GD_NL
      for p; do printf 'fs\t%s\t%s\n' "$p" "${_rest%%"$GD_NL"*}"; _rest=${_rest#*"$GD_NL"}; done
      return 0
    fi
  }
  for p; do _o=$(df -Pk "$p" 2>&1); printf 'fs\t%s\t%s\n' "$p" "${_o##*"$GD_NL"}"; done
}
gd_model_dirs
part df gd_df
gd_i=0
while IFS= read -r gd_d; do
  [ -n "$gd_d" ] || continue
  gd_i=$((gd_i + 1))
  part "dir.$gd_i" gd_dir "$gd_d" </dev/null
done <<GD_EOF
$gd_dirs
GD_EOF
"""
).replace("@CAP@", str(MISSING_CAP))


@dataclass(frozen=True)
class Model:
    name: str  # folder name, "org/name" for nested folders, "ORG/NAME" for hub entries
    path: str
    size_bytes: int | None
    complete: bool  # config (or a GGUF file), weights, and every indexed shard present
    missing: tuple[str, ...] = ()  # shards the index names that are absent (capped)
    has_config: bool = False
    missing_count: int = 0
    shards: int | None = None  # shards the index names; None without an index
    has_weights: bool = False
    revision: str | None = None  # hub cache snapshot
    partial_downloads: int = 0  # hub cache blobs/*.incomplete


@dataclass(frozen=True)
class ModelDir:
    path: str
    exists: bool
    models: tuple[Model, ...] = ()


@dataclass(frozen=True)
class Filesystem:
    path: str
    mount: str | None
    total_bytes: int | None
    free_bytes: int | None
    device: str | None = None


@dataclass(frozen=True)
class Models:
    dirs: tuple[ModelDir, ...] = ()
    filesystems: tuple[Filesystem, ...] = ()
    notes: tuple[str, ...] = ()


def parse(parts: Mapping[str, Part]) -> Models:
    notes: list[str] = []
    dirs: list[ModelDir] = []
    numbered = sorted((int(n[4:]), p) for n, p in parts.items() if re.fullmatch(r"dir\.\d{1,6}", n))
    for _, part in numbered:
        found = _dir(part.text)
        if found is not None:
            dirs.append(found)
        if part.rc is None:
            notes.append(f"{found.path if found else 'a model dir'}: cut off (timeout)")
    if "df" in parts and not numbered:
        notes.append("no model dirs configured")
    return Models(tuple(dirs), _filesystems(text_of(parts, "df")), tuple(notes))


def _clean(value: str | None) -> str | None:
    return (clean_line(value).strip()[:400] or None) if value else None


def _int(value: str) -> int | None:
    return int(value) if re.fullmatch(r"\d{1,18}", value.strip()) else None


def _dir(text: str) -> ModelDir | None:
    lines = [line.split("\t") for line in text.splitlines() if "\t" in line]
    if not lines or lines[0][0] != "dir" or len(lines[0]) < 3:
        return None
    models: list[Model] = []
    for rec in lines[1:]:
        kind, value = rec[0], rec[1] if len(rec) > 1 else ""
        if kind == "model" and len(rec) >= 3:
            models.append(Model(_model_name(value), _clean(rec[2]) or "?", None, False))
            continue
        if not models:
            continue
        m = models[-1]
        if kind == "config":
            m = replace(m, has_config=True)
        elif kind == "weights":
            m = replace(m, has_weights=True)
        elif kind == "size":
            kib = _int(value)
            m = replace(m, size_bytes=None if kib is None else kib * 1024)
        elif kind == "missing" and len(m.missing) < MISSING_CAP:
            m = replace(m, missing=(*m.missing, _clean(value) or "?"))
        elif kind == "shards" and len(rec) >= 3:
            total, miss = _int(rec[1]) or 0, _int(rec[2]) or 0
            m = replace(m, shards=(m.shards or 0) + total, missing_count=m.missing_count + miss)
        elif kind == "rev":
            m = replace(m, revision=_clean(value))
        elif kind == "partial":
            m = replace(m, partial_downloads=_int(value) or 0)
        models[-1] = m
    final = tuple(replace(m, complete=_complete(m)) for m in models)
    return ModelDir(_clean(lines[0][1]) or "?", lines[0][2].strip() == "1", final)


def _complete(m: Model) -> bool:
    gguf = m.path.endswith(".gguf") or "gguf" in m.name.lower()
    return m.has_weights and (m.has_config or gguf) and m.missing_count == 0 and not m.missing


def _model_name(folder: str) -> str:
    """`models--Qwen--Qwen3-8B` -> "Qwen/Qwen3-8B" (hub names cannot contain "--")."""
    if folder.startswith("models--"):
        folder = folder[len("models--") :].replace("--", "/", 1)
    return clean_line(folder).strip()[:200] or "?"


_TOKEN = re.compile(r"\S+")
_PERCENT = re.compile(r"\d+%|-")


def _df_line(line: str) -> tuple[str, int, int, str] | None:
    r"""`df -P -k` data line: device (may hold spaces), total and free KiB, mount (may hold
    spaces). The first run of 3 numbers, a percentage and a `/path` wins, as a lazy regex
    would pick, but token by token: `^(.*?)\s+(\d+)...` was quadratic in runs of spaces."""
    tokens = [(m.start(), m.group()) for m in _TOKEN.finditer(line)]
    for i in range(1, len(tokens) - 4):
        (_, a), (_, b), (_, c), (_, pct), (at, mount) = tokens[i : i + 5]
        numbers = is_uint(a) and is_uint(b) and is_uint(c)
        if numbers and _PERCENT.fullmatch(pct) and mount.startswith("/"):
            return line[: tokens[i][0]].strip(), int(a), int(c), line[at:]
    return None


def _filesystems(text: str) -> tuple[Filesystem, ...]:
    out: list[Filesystem] = []
    for line in text.splitlines():
        rec = line.split("\t", 2)
        if len(rec) < 3 or rec[0] != "fs":
            continue
        m = _df_line(rec[2].strip())
        if not m:
            out.append(Filesystem(_clean(rec[1]) or "?", None, None, None))
            continue
        out.append(
            Filesystem(
                path=_clean(rec[1]) or "?",
                mount=_clean(m[3]),
                total_bytes=m[1] * 1024,
                free_bytes=m[2] * 1024,
                device=_clean(m[0]),
            )
        )
    return tuple(out)


def summary(data: Models) -> str:
    """The one line `gpudash probe` prints for this section."""
    bits = []
    for d in data.dirs:
        if not d.exists:
            continue
        size = sum(m.size_bytes or 0 for m in d.models)
        broken = sum(not m.complete for m in d.models)
        text = f"{d.path}: {len(d.models)} models ({human_bytes(size)})"
        bits.append(text + (f", {broken} incomplete" if broken else ""))
    free = ", ".join(f"{fs.path} {human_bytes(fs.free_bytes)} free" for fs in data.filesystems)
    return " · ".join([*(bits or ["no model dirs"]), free] if free else bits or ["no model dirs"])


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "Models"


def report(m: Models) -> list[str]:
    lines = []
    rows: list[Sequence[object]] = []
    for d in m.dirs:
        if not d.exists:
            rows.append((d.path, "(no such dir)", "", "", ""))
        for model in d.models:
            missing = (
                f"{model.missing_count} of {model.shards} shards" if model.missing_count else ""
            )
            rows.append(
                (
                    d.path,
                    model.name,
                    human_bytes(model.size_bytes),
                    "yes" if model.complete else "NO",
                    missing,
                )
            )
    if rows:
        lines += md_table(["Dir", "Model", "Size", "Complete", "Missing"], rows)
    else:
        lines.append("No model dirs probed.")
    if m.filesystems:
        lines.append("")
        rows = [
            (fs.path, fs.mount, human_bytes(fs.free_bytes), human_bytes(fs.total_bytes))
            for fs in m.filesystems
        ]
        lines += md_table(["Path", "Mount", "Free", "Size"], rows)
    return lines
