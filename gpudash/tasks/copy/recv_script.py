"""The receiving end of a direct copy (`files/recv.sh` on the destination): the forced command
of the one-use key, so everything here is written for a source host that may be hostile.

What the key can reach is this copy's partial directory `$S`, and nothing else, by
construction rather than by filtering names:

- **No link exists in `$S` while data lands.** The destination job (trusted: it runs before
  the key is in place) removes every symlink, hard-linked file and special file a partial copy
  may hold from an earlier run. The tar streams cannot make links: `--transform` empties every
  symlink's and hard link's target, which the kernel refuses (ENOENT; GNU tar turns an empty
  hard link target into `.`, and a hard link to a directory is EPERM), so such a member
  fails the stream. The source sends none (`--hard-dereference`; symlinks go by `seal`).
- **Links come last, and end the data.** `seal` makes the copy's symlinks and directory modes
  under an exclusive lock that waits for every open data verb (each holds it shared), and
  marks the run sealed: no data verb runs after it. So a link is never there to be followed
  by tar, `dd`, `mkdir` or `rm`; a link to anywhere is copied as faithfully as the source has
  it.
- **Every path from the source goes through one walker** (`under`): it enters `$S` one
  component at a time, refusing a component that is a link (`[ -L ]`) and checking after each
  step that the shell's physical working directory (`cd -P` sets `$PWD` from getcwd) is the
  expected one, so a link planted between the test and the step is caught too. Files are
  then named relative to that directory, one component, created without following a link
  (`dd oflag=nofollow`), and a byte range is written only through a descriptor whose real
  path, type (regular) and link count (1) were checked after opening (/proc/self/fd).

What the key cannot do: run any other command (sshd's forced command, `restrict`), connect
from another address (`from=`), work for another run (the forced command names its run, and
`recv.sh` is rewritten per run), or outlive its run (`until`, the sweeps in `direct_scripts`).
"""

from __future__ import annotations

# ruff: noqa: E501  (shell text: its long lines are commands and messages, kept whole to grep)
from gpudash.tasks.copy.direct_scripts import DEST_COMMON, MANIFEST_FN, SWEEP_FN

# `under PATH [make]`: cd into $SR/PATH through real directories only (see the docstring);
# with `make`, missing ones are made. `split PATH` sets D (its directory, "" at the top) and
# B (its last component). `safe` refuses absolute paths, `.`, `..` and empty components.
CONFINE_FN = r"""
unset CDPATH
safe() {
    case "/$1/" in *"/../"* | *"/./"* | *"//"*) return 1 ;; esac
    [ -n "$1" ]
}
split() {
    case "$1" in */*) D=${1%/*} B=${1##*/} ;; *) D= B=$1 ;; esac
}
under() {
    cd -P -- "$SR" && [ "$PWD" = "$SR" ] || return 3
    rest=$1 want=$SR
    while [ -n "$rest" ]; do
        c=${rest%%/*}
        if [ "$c" = "$rest" ]; then rest=; else rest=${rest#*/}; fi
        [ ! -L "./$c" ] || return 3
        if [ ! -d "./$c" ]; then
            [ "$2" = make ] || return 3
            mkdir -- "./$c" 2>/dev/null || [ -d "./$c" ] || return 4
        fi
        want=$want/$c
        cd -P -- "./$c" && [ "$PWD" = "$want" ] || return 3
    done
}
"""

# Every session opens $J/data.lock as fd 9 (so the next run's destination job finds what is
# left of it); the verbs that change $S hold it shared, `seal` exclusive.
_LOCKS = r"""
data() {
    flock -s 9 || exit 3
    if [ -e "$J/sealed" ]; then echo "gpudash: this copy is sealed: no more data" >&2; exit 3; fi
    mkdir -p "$S" || exit 3
    SR=$(cd -P -- "$S" && pwd -P) || exit 3
}
reader() {
    flock -s 9 || exit 3
}
"""

RECV = (
    DEST_COMMON
    + SWEEP_FN
    + MANIFEST_FN
    + CONFINE_FN
    + _LOCKS
    + r"""
J=$(cd "$(dirname "$0")/.." && pwd) || exit 3
JP=$(cd -P "$J" && pwd -P) || exit 3
exec 9>> "$J/data.lock"
U=$(cat "$J/until" 2>/dev/null)
if [ "$1" != "$GPUDASH_RUN" ]; then
    case "$1" in *[!0-9A-Za-z-]* | "") ;; *) sweep "gpudash-copy-$1" ;; esac
    echo "gpudash: this key belongs to an earlier run of this copy" >&2
    exit 3
fi
if [ -z "$U" ] || [ "$(date +%s)" -ge "$U" ] || [ -e "$J/finished" ] || [ -e "$J/aborted" ] || [ -e "$J/left" ]; then
    sweep "$TAG"
    echo "gpudash: this copy's key has expired" >&2
    exit 3
fi
# A fan-out's next hops: `VERB ALIAS ADDR PORT USER [ALIAS ADDR PORT USER ...]`, run on the
# first with the rest, under this copy's key and the host keys gpudash verified (files/).
# A hop that failed once (unreachable, silent 15 s, its end failed) is marked dead
# (`fwd.dead`) and not tried again by this copy's later sessions: this host ends the chain,
# so a lost hop costs one timeout, not one per stream and byte range; the hosts after it are
# completed from the source by their own runs.
fwd() {
    verb=$1
    shift
    [ $# -ge 4 ] && [ $(( $# % 4 )) -eq 0 ] || return 3
    case "$*" in *[!A-Za-z0-9._:@\ -]*) return 3 ;; esac
    case "$1" in gpudash-copy-d[0-9]*) ;; *) return 3 ;; esac
    a=$1 addr=$2 port=$3 user=$4
    shift 4
    ssh -i "$J/files/id" -F /dev/null -o IdentitiesOnly=yes -o IdentityAgent=none \
        -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$J/files/known_hosts" \
        -o GlobalKnownHostsFile=/dev/null -o HostKeyAlias="$a" \
        -o ServerAliveInterval=5 -o ServerAliveCountMax=3 -o ConnectTimeout=10 -o LogLevel=ERROR \
        -c aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com \
        -p "$port" -l "$user" "$addr" "$verb" "$@" || { : > "$J/fwd.dead"; return 1; }
}
# VERB's stream from stdin into HANDLER; on a fan-out hop (next hops in "$@") the stream goes
# on to the next host as it arrives (tee -p keeps feeding the one output that still reads
# when the other fails), and this end waits for the next.
relay() {
    verb=$1 handler=$2
    shift 2
    data
    [ ! -e "$J/fwd.dead" ] || set --
    [ $# -gt 0 ] || { $handler; exit $?; }
    f="$J/fwd.$$"
    rm -f "$f" && mkfifo "$f" || exit 3
    fwd "$verb" "$@" < "$f" > /dev/null 2>> "$J/fwd.err" &
    tee -p "$f" 2>/dev/null | $handler
    rc=$?
    wait
    rm -f "$f"
    exit $rc
}
# No link can come out of a stream: every symlink and hard link target is emptied, which
# the kernel refuses, so the member fails (and the stream with it). Modes are the archive's
# (umask 0) less setuid, setgid and sticky (--no-same-permissions): as root, `-p` made a
# setuid-root program of whatever the source sent.
untar() { ( umask 0; tar -xf - --no-same-owner --no-same-permissions --transform='s,.*,,Rsh' -C "$SR" ); }
# The tree's directories (one relative path a line, up to an empty line or the end), made
# before any tar of this session extracts: tars extracting side by side into a directory none
# of them has made yet race in GNU tar (the loser's mkdir finds it made, and it reports
# "Cannot open: No such file or directory"); `under ... make` is race-free beside another.
# Made without their modes: those come with `seal` at the end (a read-only directory must
# stay writable until its files are in).
skeleton() {
    while IFS= read -r p; do
        [ -n "$p" ] || return 0  # the end of a `tree` session's directories
        safe "$p" || return 3
        under "$p" make || return 3
    done
}
tree_in() { skeleton && untar; }
# Byte ranges from stdin into the partial copy: a header line `OFF_MIB LEN MODE [STAMP] PATH`,
# then exactly LEN bytes (dd's count_bytes reads no further), until the stream ends. Each
# range is written through fd 5 (dd reopens that very file through /proc/self/fd/5: its seek
# is then from the start) once its real path, type and link count were checked, and
# recorded in $J/landed, piece by piece (`STAMP OFF_MIB LEN PATH`), with the source file's
# STAMP: a run after a cut sends only the rest.
land() {
    while IFS= read -r hdr; do
        off=${hdr%%"	"*}; rest=${hdr#*"	"}; len=${rest%%"	"*}; rest=${rest#*"	"}
        mode=${rest%%"	"*}; p=${rest#*"	"}; stamp=
        case "$p" in *"	"*) stamp=${p%%"	"*}; p=${p#*"	"} ;; esac
        case "$off$len" in *[!0-9]* | "") return 3 ;; esac
        case "$mode" in [0-7][0-7][0-7]) ;; *) return 3 ;; esac  # no setuid, setgid, sticky
        case "$stamp" in *[!0-9.]*) return 3 ;; esac
        safe "$p" || return 3
        split "$p"
        under "$D" make || return 3
        dd of="./$B" oflag=nofollow conv=notrunc count=0 status=none </dev/null || return 3
        exec 5<> "./$B" || return 3
        [ -f /proc/self/fd/5 ] && [ "$(readlink /proc/self/fd/5)" = "$SR/$p" ] \
            && [ "$(stat -L -c %h /proc/self/fd/5)" = 1 ] || return 3
        # in pieces, each recorded once written: a cut loses at most one piece per stream
        piece=1048576
        [ "$len" -lt 67108864 ] || piece=16777216
        at=0
        while [ "$at" -lt "$len" ]; do
            n=$(( len - at < piece ? len - at : piece ))
            dd of=/proc/self/fd/5 conv=notrunc bs=1M seek=$(( off + at / 1048576 )) count="$n" \
                iflag=fullblock,count_bytes status=none || return 4
            [ -z "$stamp" ] || printf '%s\t%s\t%s\t%s\n' "$stamp" $(( off + at / 1048576 )) "$n" "$p" >> "$J/landed"
            at=$(( at + n ))
        done
        chmod "$mode" /proc/self/fd/5 || return 4
        exec 5>&-
    done
}
# What the destination has: BASE (none, partial or final) and its manifest in $J/m.dst.
base_manifest() {
    what_is_there
    case "$BASE" in
    partial) manifest "$S" "$J/m.dst" ;;
    final) manifest "$GPUDASH_TO" "$J/m.dst" ;;
    *) : > "$J/m.dst" ;;
    esac
}
set -f
set -- $SSH_ORIGINAL_COMMAND
case "$1" in
# `hold [manifest | ack]`: with `manifest`, the hold session answers the manifest first, after
# the count of its lines (the source reads exactly those as they come, with nothing after them
# to wait for), so a copy's start costs one connection, not two; the reader lock is let go of
# after it (a hold keeping it would starve `seal`): the hold closes it. With `ack` (the
# destination job said it has nothing there, and the streams start beside the hold) it
# answers only that it is up: a manifest then would walk the streams' first files as they land.
hold)
    exec 7>> "$J/held"
    flock 7
    : > "$J/hold-started"
    case "$2" in
    manifest)
        reader
        base_manifest || exit 4
        echo $(( $(wc -l < "$J/m.dst") + 1 ))
        echo "base $BASE"
        cat "$J/m.dst"
        ;;
    ack) echo 1; echo up ;;
    esac
    exec 9>&-  # a hold lands no data: `manifest settle` must not take it for a lost chain's
    while [ "$(timeout 15 head -c 1 | wc -c)" -eq 1 ] 2>/dev/null; do :; done
    ;;
# `manifest [settle]`: with `settle` (a fan-out's destination, once the chain's pass ended
# at the source: every session of a chain whose hops all lived has ended by then), the
# sessions of it still open here go first: the hop before this one was lost mid-stream,
# and they would hold the data lock (and `seal`) until TCP gave up on it. What they
# landed stays; the manifest says what it is.
manifest)
    [ "$2" != settle ] || end_sessions data.lock
    reader
    base_manifest || exit 4
    echo "base $BASE"
    cat "$J/m.dst"
    ;;
prune)
    data
    while IFS= read -r p; do
        safe "$p" || continue
        split "$p"
        under "$D" || continue
        rm -rf -- "./$B"
    done
    ;;
mkdirs)
    shift
    relay mkdirs skeleton "$@"
    ;;
recv)
    shift
    relay recv untar "$@"
    ;;
# `tree`: every stream with a tar sends the directories (as `mkdirs`, then an empty line) and
# its tar in one session, so its tar makes none beside another's and no `mkdirs` session
# comes first: a fan-out's chain then makes one handshake per hop, not two one after the other.
tree)
    shift
    relay tree tree_in "$@"
    ;;
parts)
    shift
    relay parts land "$@"
    ;;
# The copy's symlinks and directory modes, then no more data: lines `l TAB - TAB PATH TAB
# TARGET` and `d TAB MODE TAB PATH` (the source sends directories deepest first).
seal)
    flock 9 || exit 3
    : > "$J/sealed"
    rm -f "$J/sealed.m"
    mkdir -p "$S" || exit 3
    SR=$(cd -P -- "$S" && pwd -P) || exit 3
    while IFS= read -r line; do
        t=${line%%"	"*}; rest=${line#*"	"}; mode=${rest%%"	"*}; rest=${rest#*"	"}
        p=${rest%%"	"*}; target=${rest#*"	"}
        safe "$p" || exit 3
        case "$t" in
        l)
            [ -n "$target" ] && [ "$target" != "$rest" ] || exit 3
            split "$p"
            under "$D" || exit 3
            [ ! -e "./$B" ] && [ ! -L "./$B" ] || exit 3
            ln -sT -- "$target" "./$B" || exit 4
            ;;
        d)
            case "$mode" in *[!0-7]* | "") exit 3 ;; esac
            under "$p" || exit 3
            chmod "$mode" . || exit 4
            ;;
        *) exit 3 ;;
        esac
        # what the copy's manifest says of it now (`manifest`: PATH TYPE MODE SIZE SHA LINK)
        if [ "$t" = l ]; then printf '%s\tl\t777\t0\t-\t%s\n' "$p" "$target"; else printf '%s\td\t%s\t0\t-\t\n' "$p" "$mode"; fi >> "$J/sealed.m"
    done
    # `seal prepare`: the manifest of the sealed copy next, in this same session. Else a
    # manifest taken before (every file was there: no data since) is brought up to date
    # with what was made, so the verification needs no second pass over the tree.
    if [ "$2" = prepare ]; then
        rm -f "$J/sealed.m"
        manifest "$S" "$J/m.dst" || exit 4
    elif [ -f "$J/m.dst" ] && [ -f "$J/sealed.m" ]; then
        awk -F '\t' 'FNR == NR { made[$1] = 1; print; next } !($1 in made)' "$J/sealed.m" "$J/m.dst" \
            | LC_ALL=C sort > "$J/m.dst.new" && mv "$J/m.dst.new" "$J/m.dst"
    fi
    rm -f "$J/sealed.m"
    ;;
landed)
    reader
    [ ! -d "$S" ] || cat "$J/landed" 2>/dev/null
    ;;
ping)
    ;;
prepare)
    reader
    mkdir -p "$S" || exit 3
    manifest "$S" "$J/m.dst" || exit 4
    ;;
verify)
    reader
    cat > "$J/m.src" || exit 3
    if ! cmp -s "$J/m.src" "$J/m.dst"; then
        n=$(LC_ALL=C comm -3 "$J/m.src" "$J/m.dst" | wc -l)
        echo "verification failed on the destination: $n manifest lines differ, the first:"
        LC_ALL=C comm -3 "$J/m.src" "$J/m.dst" | cut -f 1-5 | head -n 10 | sed 's/^/  /'
        rm -rf "$S" "$J/landed"
        : > "$J/aborted"
        exit 1
    fi
    if awk -F '\t' '$2 == "b" || $2 == "c" { found = 1 } END { exit !found }' "$J/m.dst"; then
        echo "verification refused: the copy holds a device file (a direct copy never makes one)"
        rm -rf "$S" "$J/landed"
        : > "$J/aborted"
        exit 1
    fi
    if [ -e "$GPUDASH_TO" ]; then
        [ "$GPUDASH_REPLACE" = 1 ] || { echo "$GPUDASH_TO appeared meanwhile: not replaced"; exit 3; }
        mv "$GPUDASH_TO" "$S.old" && mv "$S" "$GPUDASH_TO" && rm -rf "$S.old" || exit 3
    else
        mv "$S" "$GPUDASH_TO" || exit 3
    fi
    rm -f "$J/landed"
    : > "$J/finished"
    echo "in place: $GPUDASH_TO"
    ;;
done)
    : > "$J/finished"
    ;;
# The source lost a stream and keeps the partial copy for its next run: the key goes now.
leave)
    sweep "$TAG"
    : > "$J/left"
    ;;
abort)
    rm -rf "$S" "$J/landed"
    : > "$J/aborted"
    ;;
*)
    echo "gpudash: not a copy command" >&2
    exit 2
    ;;
esac
"""
)
