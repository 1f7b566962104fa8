"""The shell side of the copy task: constant scripts, and the manifests they print, compared.

A copy is `tar -cf -` on the source host, streamed through gpudash into `tar -xpf -` on the
destination, which unpacks into a sibling directory `DEST.gpudash-copy-RUN`; only once every
file's sha256 matches the source's is it renamed to DEST, so a failed or cancelled copy never
leaves a half-written DEST behind. Every value arrives as an `export K=<shlex.quote(v)>` line
(`gpudash.tasks.render.exports`); the scripts below are constants that read them quoted.

Each script first prints a random marker line: whatever the login prints before it (a motd)
is dropped, and on the source nothing but tar's bytes follow the header, so the stream is
exactly the archive (tar's complaints go to a temp file, read back by `SOURCE_DONE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudash.shlib import GRACES
from gpudash.shlib import LIB as SHLIB
from gpudash.tasks import render

# The process group of this script: `timeout` (in the exec string) made itself its leader,
# so killing the group stops sh, tar and everything they started, and nothing else.
_PGID = """\
G=
read -r _ _ _ _ G _ < /proc/$$/stat 2>/dev/null || G=$(ps -o pgid= -p $$ 2>/dev/null)
G=$(printf '%s' "$G" | tr -dc 0-9)
"""

SOURCE = (
    _PGID
    + """\
fail() { printf '%s error %s\\n' "$GPUDASH_MARK" "$*"; exit 3; }
command -v tar >/dev/null 2>&1 || fail "tar is not installed on the source host"
[ -d "$GPUDASH_PATH" ] || fail "no directory $GPUDASH_PATH on the source host"
cd "$GPUDASH_PATH" || fail "cannot enter $GPUDASH_PATH on the source host"
E=$(mktemp "${TMPDIR:-/tmp}/gpudash-copy.XXXXXX") || fail "mktemp failed on the source host"
# The archive's size, for progress: a 512-byte header per entry (and for ./), data padded
# to 512, two zero blocks at the end, all padded to tar's 10 KiB records. Printed with %.0f:
# mawk (Debian's awk) clamps %d at 2^31-1 and busybox awk wraps it negative; doubles are
# exact to 2^53 bytes.
N=$(find . -mindepth 1 -printf '%y %s\\n' 2>/dev/null | awk '
    $1 == "f" { n++; s += 512 + int(($2 + 511) / 512) * 512; next }
    { s += 512 }
    END { printf "%.0f %.0f", n, int((s + 1536 + 10239) / 10240) * 10240 }')
printf '%s pgid %s files %s err %s\\n' "$GPUDASH_MARK" "$G" "$N" "$E"
exec tar -cf - . 2>"$E"
"""
)

DEST = (
    _PGID
    + """\
fail() { printf '%s error %s\\n' "$GPUDASH_MARK" "$*"; exit 3; }
T="$GPUDASH_TO.gpudash-copy-$GPUDASH_RUN"
command -v tar >/dev/null 2>&1 || fail "tar is not installed on the destination host"
if [ -e "$GPUDASH_TO" ] && [ "$GPUDASH_REPLACE" != 1 ]; then
    fail "$GPUDASH_TO already exists on the destination host (replace = true overwrites it)"
fi
mkdir -p "$(dirname "$GPUDASH_TO")" || fail "cannot create the parent of $GPUDASH_TO"
# Each run holds a lock beside its partial copy while it lives; a partial copy whose lock is
# free was left by a gpudash that died mid-copy, and goes (a *.old is a replaced original).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$T.lock" && flock -n 9 || fail "cannot lock $T.lock"
    for old in "$GPUDASH_TO".gpudash-copy-*; do
        case "$old" in "$T" | *.lock | *.old) continue ;; esac
        if [ -d "$old" ] && flock -n "$old.lock" true 2>/dev/null; then
            rm -rf "$old" "$old.lock"
        fi
    done
fi
mkdir -m 700 "$T" || fail "cannot create $T"
printf '%s pgid %s\\n' "$GPUDASH_MARK" "$G"
tar -xpf - --no-same-owner -C "$T"
rc=$?
printf '%s tar %s\\n' "$GPUDASH_MARK" "$rc"
exit "$rc"
"""
)

# What tar said on the source (its stderr went to a temp file), then the file removed.
SOURCE_DONE = """\
if [ -f "$GPUDASH_ERR" ]; then
    cat "$GPUDASH_ERR"
    rm -f "$GPUDASH_ERR"
fi
"""

# Every entry as NUL-separated fields (type, mode, path, and the target of a link or the size
# of a file), an `e` record, then sha256sum's lines for every file, in path order.
MANIFEST = """\
cd "$GPUDASH_DIR" || exit 3
printf '%s\\n' "$GPUDASH_MARK"
find . -mindepth 1 \\( -type l -printf 'l\\0%m\\0%P\\0%l\\0' \\) \\
    -o \\( -type f -printf 'f\\0%m\\0%P\\0%s\\0' \\) -o -printf '%y\\0%m\\0%P\\0\\0' || exit 4
printf 'e\\0'
find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum -- || exit 5
"""

FINISH = """\
T="$GPUDASH_TO.gpudash-copy-$GPUDASH_RUN"
if [ -e "$GPUDASH_TO" ]; then
    [ "$GPUDASH_REPLACE" = 1 ] || { echo "$GPUDASH_TO appeared meanwhile: not replaced"; exit 3; }
    mv "$GPUDASH_TO" "$T.old" && mv "$T" "$GPUDASH_TO" && rm -rf "$T.old" || exit 3
else
    mv "$T" "$GPUDASH_TO" || exit 3
fi
rm -f "$T.lock"
"""

# Stop a copy end: TERM its process group, KILL what is left (the library's kill_group, with
# the copy's grace); then drop the partial copy.
STOP = (
    SHLIB
    + f'kill_group "$GPUDASH_PGID" {GRACES["copy"].seconds}\n'
    + """\
if [ -n "${GPUDASH_TO:-}" ]; then
    rm -rf "$GPUDASH_TO.gpudash-copy-$GPUDASH_RUN" "$GPUDASH_TO.gpudash-copy-$GPUDASH_RUN.lock"
fi
if [ -n "${GPUDASH_ERR:-}" ]; then rm -f "$GPUDASH_ERR"; fi
exit 0
"""
)

_PATHS = ("GPUDASH_PATH", "GPUDASH_TO", "GPUDASH_DIR")


def script(body: str, values: Mapping[str, str], *, stdin: bool = False) -> str:
    """`export` lines for `values`, `~/` expanded on the host, then the constant `body`.

    Under `/bin/sh -s` the script itself is stdin, so it runs inside `{ ...; } </dev/null`
    (nothing in it can swallow the rest); with `stdin` (the receiving end, started with
    `start_input`) stdin is the archive, which tar reads.
    """
    paths = [name for name in _PATHS if name in values]
    inner = render.exports(values) + render.home_expansion(paths) + body
    return inner if stdin else "{\n" + inner + "} </dev/null\n"


def preview(params: Mapping[str, object]) -> str:
    """What a confirmation shows for a copy: the script each end runs (a run's own id and
    marker, made when it starts, appear as RUN and MARK)."""
    path = str(params.get("path") or "")
    to = str(params.get("to") or "") or path
    replace = "1" if params.get("replace") else "0"
    source = script(SOURCE, {"GPUDASH_PATH": path, "GPUDASH_MARK": "MARK"})
    dest = script(
        DEST,
        {
            "GPUDASH_TO": to,
            "GPUDASH_RUN": "RUN",
            "GPUDASH_REPLACE": replace,
            "GPUDASH_MARK": "MARK",
        },
        stdin=True,
    )
    return (
        f"# copy from {params.get('from') or '(params.from unset)'}: on the source host\n"
        + source
        + "# on the destination host, stdin = the archive; then sha256 of every file on both\n"
        + dest
    )


# --- manifests ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    kind: str  # f, d, l, or another find %y letter
    mode: str
    extra: str  # a file's size, a link's target


@dataclass(frozen=True)
class Manifest:
    entries: Mapping[str, Entry]
    hashes: Mapping[str, str]

    @property
    def files(self) -> int:
        return sum(1 for e in self.entries.values() if e.kind == "f")

    @property
    def size(self) -> int:
        return sum(int(e.extra) for e in self.entries.values() if e.kind == "f")


class ManifestError(ValueError):
    """The listing did not parse (the host's find or sha256sum is not GNU's)."""


def _unescape(name: str) -> str:
    """sha256sum's escaped names (a line starting with `\\`): `\\\\`, `\\n`, `\\r`."""
    out = []
    chars = iter(name)
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "r": "\r", "\\": "\\"}.get(nxt, "\\" + nxt))
        else:
            out.append(c)
    return "".join(out)


def parse_manifest(data: bytes) -> Manifest:
    text = data.decode("utf-8", errors="surrogateescape")
    fields = text.split("\0")
    entries: dict[str, Entry] = {}
    i = 0
    while True:
        if i >= len(fields):
            raise ManifestError("the file listing ended early")
        kind = fields[i]
        if kind == "e":
            rest = "\0".join(fields[i + 1 :])
            break
        if i + 3 >= len(fields):
            raise ManifestError("the file listing ended early")
        mode, path, extra = fields[i + 1 : i + 4]
        entries[path] = Entry(kind, mode, extra)
        i += 4
    hashes: dict[str, str] = {}
    for line in rest.split("\n"):
        if not line:
            continue
        escaped = line.startswith("\\")
        digest, sep, name = line[1:].partition("  ") if escaped else line.partition("  ")
        if not sep or len(digest) != 64:
            raise ManifestError(f"unexpected sha256sum line {line[:80]!r}")
        name = _unescape(name) if escaped else name
        hashes[name[2:] if name.startswith("./") else name] = digest
    return Manifest(entries, hashes)


def _show(path: str) -> str:
    return repr(path) if any(not c.isprintable() or c in " '\"" for c in path) else path


def compare(source: Manifest, dest: Manifest, *, limit: int = 5) -> list[str]:
    """One line per difference, first differing paths first (at most `limit` named)."""
    problems: list[str] = []
    names = sorted(set(source.entries) | set(dest.entries))
    for path in names:
        a, b = source.entries.get(path), dest.entries.get(path)
        if a is None:
            problems.append(f"{_show(path)}: only on the destination")
        elif b is None:
            problems.append(f"{_show(path)}: missing on the destination")
        elif a.kind != b.kind:
            problems.append(f"{_show(path)}: a {a.kind} on the source, a {b.kind} here")
        elif a.kind == "l" and a.extra != b.extra:
            problems.append(f"{_show(path)}: link to {b.extra!r}, not {a.extra!r}")
        elif a.kind == "f" and source.hashes.get(path) != dest.hashes.get(path):
            problems.append(f"{_show(path)}: sha256 differs")
        elif a.kind != "l" and a.mode != b.mode:
            problems.append(f"{_show(path)}: mode {b.mode}, not {a.mode}")
    if len(problems) > limit:
        problems = [*problems[:limit], f"... and {len(problems) - limit} more"]
    return problems
