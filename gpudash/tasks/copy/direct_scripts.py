"""The shell of a direct copy: two detached jobs and the receiving end, all constants.

    destination job (task name, e.g. `copy`)   installs the one-use key, waits, removes it
    receiving end (`files/recv.sh` there)      what the key may run: the forced command
                                               (`recv_script`: confined to the partial copy)
    source job (`copy-to-DEST`)                sends the bytes over its own ssh, verifies

Every value arrives as an `export K=<shlex.quote(v)>` line above these bodies
(`gpudash.tasks.render.exports`). The key's removal never depends on gpudash: the destination
job removes its line when the source's `hold` session ends (the source job exited, was killed,
or its link went silent for 15 s), on TERM (cancel, timeout), and the receiving end refuses
and removes it past its expiry; every copy's start sweeps expired lines left by any earlier
one. The source job removes its private key on exit (and `jobs.launch` clears `files/`).

The manifest is one line per entry, `PATH TAB TYPE TAB MODE TAB SIZE TAB SHA256 TAB LINK`,
sorted bytewise (LC_ALL=C) on both hosts, so "identical" is `cmp` and the differences are
`comm`. Names with a tab, newline, carriage return or backslash are refused up front (they
would need an escaping that `find -printf` and `sha256sum` do not share: coreutils 9 escapes
a carriage return too, and its file's line would then carry no digest on either host); `via = "gpudash"` copies them.
"""

from __future__ import annotations

# ruff: noqa: E501  (shell text: its long lines are commands and messages, kept whole to grep)
from gpudash.shlib import COPY_LIB

# A manifest of directory $1 into file $2 (and $2.list, $2.sha, $2.h/ beside it), hashed by
# one process per core (GPUDASH_HASHERS, default `nproc`, at most 16): big files one per
# process (four 256 MiB shards must not queue behind one hasher), the rest 128 at a time,
# each hasher appending to its own file ($2.h/PID: no two outputs interleave; no glob, as the
# receiving end runs with `set -f`). One process per 8 files, as before, took 0.53 s over
# 2,004 files of 192 MiB, against 0.16 s now (this VM, 2026-12-06): the destination hashes
# while the source waits. The hasher is OpenSSL's sha256 when it gives the known digest of
# "abc" (FIPS 180-2 appendix B.1): it uses the CPU's SHA extensions, 1.3 GB/s here against
# coreutils 9.1 sha256sum's 0.32 GB/s (measured on this VM, 2026-12-03); `openssl dgst -r`
# prints sha256sum's `HEX *NAME` (the awk takes the name from column 67 either way). Same
# digest, so the same verification, only sooner.
MANIFEST_FN = r"""
hasher() {
    if [ -z "$SHA" ]; then
        SHA=sha256sum
        printf abc | openssl dgst -sha256 -r 2>/dev/null \
            | grep -q '^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad ' \
            && SHA="openssl dgst -sha256 -r"
    fi
    HASHERS=${GPUDASH_HASHERS:-$(nproc 2>/dev/null || echo 2)}
    [ "$HASHERS" -ge 1 ] 2>/dev/null || HASHERS=2
    [ "$HASHERS" -le 16 ] || HASHERS=16
}
manifest() {
    hasher
    ( cd "$1" || exit 3
      find . -mindepth 1 \( -type l -printf '%P\tl\t%m\t0\t-\t%l\n' \) \
          -o \( -type f -printf '%P\tf\t%m\t%s\t\t\n' \) \
          -o -printf '%P\t%y\t%m\t0\t-\t\n' > "$2.list" || exit 4
      rm -rf "$2.h"; mkdir "$2.h" || exit 5
      find . -type f -size +8M -print0 | xargs -0 -r -P "$HASHERS" -n 1 sh -c "$SHA"' -- "$@" >> "$0/$$"' "$2.h"
      # small files 1024 a hasher: each hasher's start costs more than its files' bytes (the
      # 2,004-file rig tree: 0.13 s wall and 0.23 s CPU a manifest, against 0.16 s and 0.30 s
      # at 128, measured 2026-12-07; a fan-out's four destinations make theirs at once)
      find . -type f ! -size +8M -print0 | xargs -0 -r -P "$HASHERS" -n 1024 sh -c "$SHA"' -- "$@" >> "$0/$$"' "$2.h"
      find "$2.h" -type f -exec cat {} + > "$2.sha" || exit 5
      # A file that got no digest (unreadable, gone, or a name the hasher escaped) gets this
      # manifest's own random mark: it can never match the other host's line, so such a copy
      # is never taken as verified (an empty field on both hosts would have matched).
      salt=$(od -An -N8 -tx8 /dev/urandom 2>/dev/null | tr -d ' ')
      awk -F '\t' -v OFS='\t' -v salt="unhashed-${salt:-$$-$(date +%s%N)}" '
          FNR == NR { n = substr($0, 67); sub(/^\.\//, "", n); sha[n] = substr($0, 1, 64); next }
          $2 == "f" { $5 = sha[$1]; if (length($5) != 64) $5 = salt }
          { print }' "$2.sha" "$2.list" | LC_ALL=C sort > "$2" || exit 6
      rm -rf "$2.list" "$2.sha" "$2.h" )
}
"""

# `sweep TAG [JOB]`: the lines of authorized_keys with this copy's TAG, every gpudash copy
# line past its expiry, and with JOB every line whose forced command is that job dir's (an
# earlier run of it that could not remove its own: its destination job killed), out. The
# file is rewritten in place, never truncated first: the lines kept are written over the
# start of it (blocks it already has, so a full disk cannot stop it: a copy of the file in a
# temporary one could not be written there, and the key stayed), then it is cut to their
# length. Its owner, mode and inode stay the user's; cut short between the two steps, it
# holds every kept line followed by a stale tail, never less than the user's keys.
SWEEP_FN = r"""
AK="$HOME/.ssh/authorized_keys"
sweep() {
    [ -f "$AK" ] || return 0
    ( flock 8
      keep=$(awk -v tag="$1" -v job="${2:-}" -v now="$(date +%s)" '
          job != "" && index($0, "command=\"/bin/sh " job "/files/recv.sh") { next }
          { for (i = 1; i <= NF; i++) if ($i ~ /^gpudash-copy-[0-9A-Za-z-]+-until-[0-9]+$/) {
                u = $i; sub(/.*-until-/, "", u)
                if ((tag != "" && index($i, tag "-until-") == 1) || u + 0 <= now) next
            }
            print }' "$AK" && echo .) || exit 1
      keep=${keep%.}
      n=$(printf '%s' "$keep" | wc -c)
      [ "$n" -lt "$(wc -c < "$AK")" ] || exit 0
      printf '%s' "$keep" | dd of="$AK" conv=notrunc status=none && truncate -s "$n" "$AK"
    ) 8>> "$HOME/.ssh/.gpudash-copy.lock"
}
"""

# `remote`, `dial`, `hold` and `mux_dir` (the sessions to the destination under the copy's
# key: $K, $KH, GPUDASH_ALIAS ADDR PORT USER, the control socket $CM) are the copy's part of
# gpudash's sh library: gpudash/shlib_copy.sh (`gpudash.shlib.COPY_LIB`).

DEST_COMMON = r"""
S="$GPUDASH_TO.gpudash-partial"
TAG="gpudash-copy-$GPUDASH_RUN"
# `what_is_there`: BASE, what the destination has at the copy's path: partial (an earlier
# run's partial copy), final (the path itself) or none.
what_is_there() {
    if [ -d "$S" ]; then BASE=partial; elif [ -d "$GPUDASH_TO" ]; then BASE=final; else BASE=none; fi
}
# `end_sessions FILE...`: every process group but this one's with one of these files of the
# job directory ($JP, its physical path) open ends, and this waits (up to 5 s) until none is
# left. Each receiving end holds $J/data.lock open for its whole session (`recv_script`; its
# children inherit it), a hold session $J/held; sshd makes each session its own group.
# find walks /proc itself: the receiving end runs with `set -f`.
end_sessions() {
    me=$(sed 's/.*) //' /proc/self/stat | cut -d ' ' -f 3)
    k=0
    while [ $k -lt 100 ]; do
        left=
        for f in "$@"; do
            for fd in $(find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/fd/*' -lname "$JP/$f" 2>/dev/null); do
                pid=${fd#/proc/}; pid=${pid%%/*}
                pg=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d ' ' -f 3)
                [ -n "$pg" ] && [ "$pg" != "$me" ] || continue
                kill -KILL "-$pg" 2>/dev/null
                left=1
            done
        done
        [ -n "$left" ] || return 0
        k=$((k + 1))
        sleep 0.05
    done
}
"""

# The destination job. It prints `gpudash-copy ready USER BASE` once the key is in place.
DEST_JOB = (
    DEST_COMMON
    + SWEEP_FN
    + r"""
fail() { echo "gpudash: $*"; exit 3; }
# the destination's own log names where the bytes come from (its job runs on its own host)
echo "direct copy from $GPUDASH_SOURCE into $GPUDASH_TO (landing in $S until verified)"
for tool in tar sha256sum find sort comm awk flock dd stat readlink truncate; do
    command -v $tool >/dev/null 2>&1 || fail "$tool is not installed on the destination host"
done
tar --version 2>/dev/null | grep -q 'GNU tar' \
    || fail "the destination's tar is not GNU tar (a direct copy needs it; via = \"gpudash\" does not)"
J="$GPUDASH_JOB"
case "$J" in *[!A-Za-z0-9._/-]*) fail "the job directory $J has characters authorized_keys cannot hold" ;; esac
if [ -e "$GPUDASH_TO" ] && [ ! -d "$GPUDASH_TO" ]; then fail "$GPUDASH_TO exists and is not a directory"; fi
mkdir -p "$(dirname "$GPUDASH_TO")" || fail "cannot create the parent of $GPUDASH_TO"
mkdir -p -m 700 "$HOME/.ssh" || fail "cannot create $HOME/.ssh"
rm -f "$J/hold-started" "$J/finished" "$J/aborted" "$J/left" "$J/held" "$J/fwd.dead" "$J/fwd.err" "$J/sealed"
# Before the key exists: what is left of an earlier run's receiving ends (a source cut off
# whose sessions sshd has not dropped yet, or a child of one outliving it) ends with its
# process group, or its writes would land in this run's partial copy after it was compared.
JP=$(cd -P "$J" && pwd -P) || fail "cannot enter the job directory $J"
end_sessions data.lock held
# Before the key exists: a partial copy an earlier run left keeps only directories and
# single-named regular files (no link, hard link, device or fifo for a verb to meet).
if [ -L "$S" ] || { [ -e "$S" ] && [ ! -d "$S" ]; }; then rm -f "$S"; fi
[ -d "$S" ] || rm -f "$J/landed"
if [ -d "$S" ]; then
    find "$S" -mindepth 1 \( -type l -o \( ! -type d ! -type f \) -o \( -type f -links +1 \) \) -delete 2>/dev/null
fi
: > "$J/held"
# whether this flock waits with a timeout (util-linux's `-w`), tried while no one holds it
WAIT="-w 1"
flock -w 0 "$J/held" true 2>/dev/null || WAIT=-n
sweep "" "$J"
UNTIL=$(( $(date +%s) + GPUDASH_EXPIRES ))
{ echo "$UNTIL" > "$J/until"; } 2>/dev/null && [ -s "$J/until" ] \
    || fail "cannot write in $J on the destination (is its disk full?); no key was installed"
# A cancel: no session of this run goes on (one that opens the lock after this sees
# `aborted` and is refused; one that had it open is killed), then the key and the partial
# copy go (a session already in made the partial directory again after its removal).
stop() {
    : > "$J/aborted"
    end_sessions data.lock held
    sweep "$TAG"
    rm -f "$J/files/id"
    rm -rf "$S" "$J/landed"
    echo "gpudash: stopped: the copy's key is removed from $AK, the partial copy too"
    exit 143
}
trap stop TERM INT HUP
[ -e "$AK" ] || { : > "$AK" && chmod 600 "$AK"; } || fail "cannot create $AK"
LINE="restrict,from=\"$GPUDASH_FROM_ADDR\",command=\"/bin/sh $J/files/recv.sh $GPUDASH_RUN\" $GPUDASH_PUB $TAG-until-$UNTIL"
( flock 8; printf '%s\n' "$LINE" >> "$AK" ) 8>> "$HOME/.ssh/.gpudash-copy.lock" \
    || fail "cannot write $AK"
# what it has at the copy's path, so that a fan-out knows which destinations its chain feeds
# without asking each one again
what_is_there
echo "gpudash-copy ready $(id -un) $BASE"
# The copy may end before its hold session is in: a fan-out's destination that was already
# complete says `done` within 0.5 s, while the hold's handshake still runs, and recv.sh then
# refuses the hold (the copy is finished). So the end ends this wait too.
ended() { [ -e "$J/finished" ] || [ -e "$J/aborted" ] || [ -e "$J/left" ]; }
i=0
while [ ! -e "$J/hold-started" ] && [ $i -lt 600 ] && ! ended; do sleep 0.2; i=$((i + 1)); done
if [ ! -e "$J/hold-started" ] && ! ended; then
    sweep "$TAG"
    rm -f "$J/files/id"
    fail "the source host never connected (within 120 s); the key is removed"
fi
# Until the hold session lets go of $J/held: a wait on the lock itself (util-linux's `-w`)
# ends the moment it does, where a poll every 0.2 s cost 0.1 s a copy on average.
while ! flock $WAIT "$J/held" true 2>/dev/null; do
    [ "$(date +%s)" -lt "$UNTIL" ] || break
    ! ended || break
    [ "$WAIT" != -n ] || sleep 0.2
done
sweep "$TAG"
rm -f "$J/files/id"
if [ -e "$J/finished" ]; then
    echo "gpudash: $GPUDASH_TO is in place and verified; the copy's key is removed from $AK"
    exit 0
fi
if [ -e "$J/aborted" ]; then
    echo "gpudash: the copy failed; the key and the partial copy are removed"
    exit 1
fi
echo "gpudash: the source went away before the end; the key is removed, the partial copy" \
    "$S is kept: run the copy again to resume"
exit 1
"""
)

# The source job: plan, send over N streams (big files in byte ranges), verify, report.
_SOURCE_BODY = (
    MANIFEST_FN
    + COPY_LIB
    + r"""
K="$GPUDASH_JOB/files/id"
KH="$GPUDASH_JOB/files/known_hosts"
W="$GPUDASH_JOB/work"
HOLD=
SRCM=
BEAT=
CMD=
# a fan-out's job holds the sessions, and its control sockets: CM is then its destination's
[ -n "$GPUDASH_HELD" ] || CM=
# In a fan-out (`fanout_scripts`): HOPS, the next hosts of the chain this stream feeds;
# SEND_ONLY, the chain's pass (no verify: each destination's own run checks and completes
# it), over CHAIN_STREAMS streams; HELD, the fan-out job holds every destination's session;
# SRC_M, the source's manifest, hashed once for all; LINES, progress as a line every 5 s
# (many destinations share a log); BASE, what the chain's first host has (none: not asked).
HOPS=${GPUDASH_HOPS:-}
CR=$(printf '\r'); EOL=; TICK=1
[ -z "$GPUDASH_LINES" ] || { CR=; EOL='\n'; TICK=5; }
src_manifest() {
    if [ -n "$GPUDASH_SRC_M" ]; then
        while [ ! -e "$GPUDASH_SRC_M" ] && [ ! -e "$GPUDASH_SRC_M.failed" ]; do sleep 0.2; done
        cp "$GPUDASH_SRC_M" "$W/src.m" 2>/dev/null
    else
        manifest . "$W/src.m"
    fi
}
cleanup() {
    rm -f "$K"
    exec 8>&- 2>/dev/null
    [ -n "$BEAT" ] && kill "$BEAT" 2>/dev/null
    [ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null
    [ -n "$SRCM" ] && kill "$SRCM" 2>/dev/null
    [ -n "$CMD" ] && rm -rf "$CMD"
    rm -rf "$W"
}
trap cleanup EXIT
trap '[ -n "$GPUDASH_SEND_ONLY" ] || remote 15 abort </dev/null >/dev/null 2>&1; exit 143' TERM INT HUP
fail() { echo "gpudash: $*"; exit "${RC:-1}"; }
# Why an ssh to the destination failed, in one line (its stderr is in $1).
said() {
    if grep -q 'Host key verification failed\|REMOTE HOST IDENTIFICATION HAS CHANGED' "$1" 2>/dev/null; then
        echo "the destination's host key is not the one gpudash trusts: refused"
    elif grep -q 'Permission denied' "$1" 2>/dev/null; then
        echo "the destination refused the copy's key (its sshd does not read ~/.ssh/authorized_keys, or the source's address is not $GPUDASH_FROM_ADDR)"
    else
        tail -n 1 "$1" 2>/dev/null | tr -d '\r'
    fi
}
human() { awk -v n="$1" 'BEGIN { split("B KiB MiB GiB TiB", u, " "); i = 1
    while (n >= 1024 && i < 5) { n /= 1024; i++ }
    if (i == 1) printf "%d %s", n, u[i]; else printf "%.1f %s", n, u[i] }'; }
for tool in ssh tar sha256sum find sort comm awk dd mkfifo timeout; do
    command -v $tool >/dev/null 2>&1 || fail "$tool is not installed on the source host"
done
tar --version 2>/dev/null | grep -q 'GNU tar' || fail "the source's tar is not GNU tar"
[ -d "$GPUDASH_PATH" ] || fail "no directory $GPUDASH_PATH on the source host"
cd "$GPUDASH_PATH" || fail "cannot enter $GPUDASH_PATH on the source host"
NL=$(printf '\nx'); NL=${NL%x}; TAB=$(printf '\t'); RET=$(printf '\r')
bad=$(find . -mindepth 1 \( -name "*$NL*" -o -name "*$TAB*" -o -name "*$RET*" -o -name '*\\*' \) -print 2>/dev/null | head -n 1)
[ -z "$bad" ] || fail "a name with a tab, newline, carriage return or backslash ($bad): copy it with via = \"gpudash\""
bad=$(find . -mindepth 1 -type l \( -lname "*$NL*" -o -lname "*$TAB*" -o -lname "*$RET*" -o -lname '*\\*' \) -print 2>/dev/null | head -n 1)
[ -z "$bad" ] || fail "a link whose target has a tab, newline, carriage return or backslash ($bad): copy it with via = \"gpudash\""
rm -rf "$W"; mkdir -m 700 "$W" || fail "cannot create $W"
if [ -n "$GPUDASH_SEND_ONLY" ]; then
    echo "chain: this host -> $GPUDASH_CHAIN ($GPUDASH_CHAIN_STREAMS streams, each host forwarding as it receives)"
else
    echo "direct copy from this host to $GPUDASH_DEST:$GPUDASH_TO ($GPUDASH_STREAMS streams)"
fi

# The hold session: the destination job watches it (and removes the key when it ends). It
# answers the destination's manifest first (`hold manifest`: the count of its lines, then
# them; `head` takes them as they come, where awk may wait to fill a block), or only that it
# is up (`hold ack`, where the destination has nothing: see LATE), then `ok` (or `no`: the
# session ended without one) goes to the fifo m.ready; the rest is drained.
if [ -z "$GPUDASH_HELD" ]; then
    mkfifo "$W/hold" "$W/hold.out" "$W/m.ready" || fail "mkfifo failed"
    mux_dir
    if [ "$GPUDASH_BASE" = none ]; then ask=ack; else ask=manifest; fi
    hold $ask < "$W/hold" > "$W/hold.out" 2> "$W/hold.err" &
    HOLD=$!
    { if read -r n && [ "$n" -ge 1 ] 2>/dev/null && head -n "$n" > "$W/hold.m" \
          && [ "$(wc -l < "$W/hold.m")" -eq "$n" ]; then
          echo ok > "$W/m.ready"
      else
          echo no > "$W/m.ready"
      fi
      cat > /dev/null; } < "$W/hold.out" &
    exec 8> "$W/hold"
    ( exec 8>&-; beat ) >&8 2>/dev/null &
    BEAT=$!
fi

# Whether ssh's words in $W/err say this host could not dial the destination at all.
undialled() {
    grep -q 'ssh: connect to host\|Could not resolve hostname\|Connection timed out\|No route to host\|Network is unreachable\|Connection refused' "$W/err" 2>/dev/null
}
# Why this host could not get to the destination, in one line (ssh's words in $W/err).
cannot_reach() {
    if undialled; then
        fail "this host cannot reach $GPUDASH_DEST at $GPUDASH_ADDR port $GPUDASH_PORT ($(said "$W/err")):" \
            "set params.dest_address to what this host can dial (HOST or HOST:PORT), or via = \"gpudash\" to copy through gpudash"
    fi
    fail "cannot reach $GPUDASH_DEST: $(said "$W/err")"
}
# Whether the hold session came up and answered (the destination's manifest, in hold.m).
answered() {
    read -r ans < "$W/m.ready"
    cp "$W/hold.err" "$W/err" 2>/dev/null
    [ "$ans" = ok ] || cannot_reach
}
# A destination that had nothing there (its job said so) needs no manifest first: the streams
# start beside the hold session's handshake, and its answer is read once they are done
# (LATE). 0.25 s sooner on a copy's critical path: the hold's handshake and round trip, here
# 0.70-0.75 s from gpudash's start against the source job's start at 0.46-0.51 s (rig,
# 2026-12-06).
LATE=
if [ -z "$GPUDASH_HELD" ] && [ "$GPUDASH_BASE" = none ]; then
    echo "base none" > "$W/dst.m"
    LATE=1
elif [ -z "$GPUDASH_HELD" ]; then
    answered
    mv "$W/hold.m" "$W/dst.m"
elif [ -n "$GPUDASH_SEND_ONLY" ] && [ "$GPUDASH_BASE" = none ]; then
    echo "base none" > "$W/dst.m"  # the chain's first host: its destination job said so
elif [ -n "$GPUDASH_SEND_ONLY" ]; then
    remote 600 manifest < /dev/null > "$W/dst.m" 2> "$W/err" || cannot_reach
else
    # a fan-out's destination after the chain's pass: what is left of the chain there goes
    remote 600 manifest settle < /dev/null > "$W/dst.m" 2> "$W/err" || cannot_reach
fi
base=$(head -n 1 "$W/dst.m")
tail -n +2 "$W/dst.m" > "$W/dst.l"
base=${base#base }
case "$base" in none | partial | final) ;; *) fail "the destination answered no manifest" ;; esac
[ -z "$GPUDASH_SEND_ONLY" ] || [ "$base" = none ] || exit 0
started=$(date +%s)
N=${GPUDASH_CHAIN_STREAMS:-$GPUDASH_STREAMS}
CHUNK=$(( GPUDASH_CHUNK_MB * 1048576 ))
# A big file's stamp (size.mtime): the destination records each byte range that landed with
# it (`landed`), so a run after a cut sends only the ranges missing from a file the source
# has not changed since. Paths on stdin, `STAMP TAB PATH` out, for files sent as ranges.
stamps() {
    [ "$N" -gt 1 ] || return 0
    while IFS= read -r p; do printf '%s\t%s\n' "$(stat -c %s.%Y -- "$p")" "$p"; done
}
# The links and the directories' modes go last, by `seal` (links first, then the modes,
# deepest first): the receiving end makes no link while data lands (`recv_script`).
seal_lines() {
    awk -F '\t' -v OFS='\t' '$2 == "l" { print "l", "-", $4, $5 }' "$W/send" > "$W/seal"
    awk -F '\t' -v OFS='\t' '$2 == "d" { print "d", $3, $4 }' "$W/send" | LC_ALL=C sort -t "$TAB" -k3,3r >> "$W/seal"
}
sealing() {
    seal_lines
    [ -s "$W/seal" ] || return 0
    remote 600 seal < "$W/seal" 2> "$W/err" || fail "links and directory modes: $(said "$W/err")"
}
# After the data: seal, then the destination's manifest of its copy, in one session.
seal_and_prepare() {
    seal_lines
    if [ -s "$W/seal" ]; then remote 0 seal prepare < "$W/seal"; else remote 0 prepare < /dev/null; fi
}
if [ "$base" != none ]; then
    echo "the destination has a $base copy: hashing here to compare (size + sha256)"
    src_manifest || fail "cannot list or hash $GPUDASH_PATH"
    if [ "$base" = final ] && cmp -s "$W/src.m" "$W/dst.l"; then
        n=$(awk -F '\t' '$2 == "f"' "$W/src.m" | wc -l)
        remote 60 done </dev/null 2> "$W/err" || fail "$(said "$W/err")"
        echo "already complete: $n files, every sha256, mode and link target matches; nothing copied"
        exit 0
    fi
    if [ "$base" = final ]; then
        [ "$GPUDASH_REPLACE" = 1 ] || { RC=3; fail "$GPUDASH_TO exists on $GPUDASH_DEST and differs (replace = true overwrites it)"; }
        : > "$W/dst.l"
    fi
    # What differs: send the source's lines the destination lacks; prune what it has extra
    # (a directory kept when the source has one at that path: its mode is re-sent).
    LC_ALL=C comm -23 "$W/src.m" "$W/dst.l" > "$W/send.m"
    # Big files with byte ranges already there (same stamp) are kept, not pruned: their
    # missing ranges are sent below.
    : > "$W/keep"
    if [ "$base" = partial ]; then
        remote 60 landed < /dev/null > "$W/landed" 2> /dev/null || : > "$W/landed"
        awk -F '\t' -v c="$CHUNK" '$2 == "f" && $4 + 0 > c { print $1 }' "$W/send.m" | stamps > "$W/stamps"
        awk -F '\t' 'FNR == NR { st[$2] = $1; next } ($4 in st) && st[$4] == $1 { print $4 }' \
            "$W/stamps" "$W/landed" | LC_ALL=C sort -u > "$W/keep"
    fi
    LC_ALL=C comm -13 "$W/src.m" "$W/dst.l" | awk -F '\t' 'FILENAME == ARGV[1] { k[$1] = 1; next }
        FILENAME == ARGV[2] { t[$1] = $2; next }
        ($2 != "d" || t[$1] != "d") && !($1 in k) { print $1 }' "$W/keep" "$W/src.m" - > "$W/prune"
    if [ -s "$W/prune" ]; then
        remote 600 prune < "$W/prune" 2> "$W/err" || fail "prune: $(said "$W/err")"
    fi
    awk -F '\t' -v OFS='\t' '{ print $4, $2, $3, $1, $6 }' "$W/send.m" > "$W/send"
    if [ "$base" = partial ] && [ ! -s "$W/prune" ] \
        && ! awk -F '\t' '$2 != "d" && $2 != "l" { x = 1 } END { exit !x }' "$W/send"; then
        echo "every file is there; verifying"
        t1=$(date +%s); el=0
        sealing
        verified
        exit 0
    fi
    have=$(awk -F '\t' '$2 == "f"' "$W/dst.l" | wc -l)
    echo "resuming: $have files already there; $(awk -F '\t' '$2 == "f"' "$W/send" | wc -l) to send"
else
    find . -mindepth 1 \( -type d -printf '0\td\t%m\t%P\n' \) -o \( -type f -printf '%s\tf\t%m\t%P\n' \) \
        -o \( -type l -printf '0\tl\t%m\t%P\t%l\n' \) -o -printf '0\t%y\t%m\t%P\n' > "$W/send" || fail "cannot list $GPUDASH_PATH"
fi
TOTAL=$(awk -F '\t' '{ s += $1 } END { printf "%.0f", s }' "$W/send")
FILES=$(awk -F '\t' '$2 == "f"' "$W/send" | wc -l)

# The plan: each stream's tar list and byte ranges, biggest first to the least loaded. A big
# file's ranges are dealt range by range across the big files (the first range of each, then
# the second...), so with as many big files as streams each stream writes one file from start
# to end: ranges of one file written by several streams at once contend for its inode's lock
# on the destination (and scatter its blocks).
[ -f "$W/landed" ] || : > "$W/landed"
awk -F '\t' -v c="$CHUNK" '$2 == "f" && $1 + 0 > c { print $4 }' "$W/send" | stamps > "$W/stamps"
awk -F '\t' '$2 != "d" && $2 != "l"' "$W/send" | LC_ALL=C sort -t "$TAB" -k1,1nr | awk -F '\t' \
    -v n="$N" -v chunk="$CHUNK" -v dir="$W" -v stamps="$W/stamps" -v landed="$W/landed" '
    BEGIN {
        while ((getline x < stamps) > 0) { split(x, f, "\t"); st[substr(x, length(f[1]) + 2)] = f[1] }
        while ((getline x < landed) > 0) {
            split(x, f, "\t"); p = substr(x, length(f[1]) + length(f[2]) + length(f[3]) + 4)
            done[f[1], f[2], p] = f[3]
        }
        skipped = 0
    }
    function least(   w, b) { b = 0; for (w = 1; w < n; w++) if (load[w] < load[b]) b = w; return b }
    function flush(   k, b, w) {
        for (k = 1; k <= most; k++) for (b = 1; b <= nb; b++) if (k <= np[b]) {
            w = least(); load[w] += len[b, k]; print line[b, k] > (dir "/parts." w)
        }
        nb = 0; most = 0
    }
    $2 == "f" && n > 1 && $1 + 0 > chunk {
        nb++; np[nb] = 0
        for (off = 0; off < $1 + 0; off += chunk) {
            left = $1 - off; l = (left < chunk ? left : chunk)
            # the pieces of this range already there, from its start: only the rest is sent
            c = 0
            if ($4 in st) while (c < l && ((st[$4], sprintf("%d", (off + c) / 1048576), $4) in done))
                c += done[st[$4], sprintf("%d", (off + c) / 1048576), $4]
            if (c >= l) { skipped += l; continue }
            skipped += c
            k = ++np[nb]; len[nb, k] = l - c
            line[nb, k] = sprintf("%d\t%d\t%.0f\t%s\t%s\t%s", (off + c) / 1048576,
                int((l - c + 1048575) / 1048576), l - c, $3, st[$4], $4)
        }
        if (np[nb] > most) most = np[nb]
        next
    }
    {
        if (nb) flush()
        w = least(); load[w] += $1 + 512
        print "./" $4 > (dir "/list." w)
    }
    END { if (nb) flush(); printf "%.0f\n", skipped > (dir "/skipped") }'
SKIPPED=$(cat "$W/skipped" 2>/dev/null || echo 0)
if [ "${SKIPPED:-0}" != 0 ]; then
    TOTAL=$(awk -v t="$TOTAL" -v s="$SKIPPED" 'BEGIN { printf "%.0f", t - s }')
    echo "$(human "$SKIPPED") of byte ranges already there (the files' size and mtime unchanged): not sent again"
fi
echo "sending $FILES files ($(human "$TOTAL"))"
awk -F '\t' '$2 == "d" { print $4 }' "$W/send" > "$W/skel"
# Each stream's session makes the tree's directories itself, ahead of its tar (`tree`; made
# race-free beside the other streams'), so no tar makes one beside another (GNU tars race
# there) and no `mkdirs` session comes first: one handshake a hop in a fan-out's chain, not
# two one after the other, and a fresh copy's streams need not wait for the hold session.
# Only where no stream has a tar (byte ranges alone) are they made first.
TREE=
if [ -s "$W/skel" ]; then
    for l in "$W"/list.*; do [ ! -s "$l" ] || TREE=1; done
    [ -n "$TREE" ] || remote 600 mkdirs $HOPS < "$W/skel" 2> "$W/err" || fail "directories: $(said "$W/err")"
fi

# One stream: its tar (progress: a dot per 100 records of 10 KiB), then its byte ranges, all
# in one session (`parts`: each range a header line `OFF_MIB LEN MODE PATH`, then LEN bytes):
# one ssh handshake per range cost more than the ranges' bytes on a busy host (16 ranges of
# 64 MiB over 4 streams: 5.3 s against 2.2 s for the same bytes as 4 plain streams, measured
# in the rig 2026-12-03). A source file that shrank meanwhile sends fewer bytes than its
# header says: the receiving end then misreads and fails, or the manifests differ; never a
# false success.
stream() {
    w=$1
    if [ -s "$W/list.$w" ] && [ -n "$TREE" ]; then
        { cat "$W/skel" && echo && tar -cf - --no-recursion --hard-dereference --checkpoint=100 \
              --checkpoint-action=dot -T "$W/list.$w" 2> "$W/dots.$w"; } \
            | dial 0 tree $HOPS 2> "$W/err.$w" || { echo "$?" > "$W/failed.$w"; return 1; }
    elif [ -s "$W/list.$w" ]; then
        tar -cf - --no-recursion --hard-dereference --checkpoint=100 --checkpoint-action=dot -T "$W/list.$w" \
            2> "$W/dots.$w" | dial 0 recv $HOPS 2> "$W/err.$w" || { echo "$?" > "$W/failed.$w"; return 1; }
    fi
    [ -s "$W/parts.$w" ] || return 0
    k=0
    while IFS="$TAB" read -r off count len mode stamp path; do
        k=$((k + 1))
        printf '%s\t%s\t%s\t%s\t%s\n' "$off" "$len" "$mode" "$stamp" "$path"
        dd if="$path" bs=1M skip="$off" count="$count" iflag=fullblock status=progress 2> "$W/dd.$w.$k" \
            || { echo fail > "$W/failed.$w"; exit 1; }
    done < "$W/parts.$w" | dial 0 parts $HOPS 2> "$W/err.$w" || { echo "$?" > "$W/failed.$w"; return 1; }
}
done_bytes() {
    d=$(cat "$W"/dots.* 2>/dev/null | wc -c)
    p=$(for f in "$W"/dd.*; do [ -f "$f" ] && tr '\r' '\n' < "$f" | grep -a 'bytes' | tail -n 1 | awk '{ print $1 }'; done | awk '{ s += $1 } END { printf "%.0f", s }')
    awk -v d="$d" -v p="$p" -v t="$TOTAL" 'BEGIN { b = d * 1024000 + p; if (b > t) b = t; printf "%.0f", b }'
}
# A fresh copy's source manifest is hashed while the streams send (the files are in the page
# cache as tar reads them); it is compared only once every byte landed, as before.
SRCM=
if [ -z "$GPUDASH_SEND_ONLY" ] && [ ! -s "$W/src.m" ]; then
    src_manifest > /dev/null 2> "$W/srcm.err" &
    SRCM=$!
fi
t0=$(date +%s)
pids=
w=0
while [ $w -lt "$N" ]; do stream $w & pids="$pids $!"; w=$((w + 1)); done
(
    while sleep $TICK; do
        b=$(done_bytes); now=$(date +%s); el=$((now - t0)); [ $el -gt 0 ] || el=1
        awk -v b="$b" -v t="$TOTAL" -v el="$el" -v f="$FILES" -v cr="$CR" -v eol="$EOL" 'BEGIN {
            r = b / el; eta = (r > 0) ? (t - b) / r : 0
            split("B KiB MiB GiB TiB", u, " ")
            x = b; i = 1; while (x >= 1024 && i < 5) { x /= 1024; i++ }; sb = sprintf("%.1f %s", x, u[i])
            x = t; j = 1; while (x >= 1024 && j < 5) { x /= 1024; j++ }; st = sprintf("%.1f %s", x, u[j])
            x = r; k = 1; while (x >= 1024 && k < 5) { x /= 1024; k++ }; sr = sprintf("%.1f %s/s", x, u[k])
            printf "%scopied %s / %s (%d%%) at %s, ETA %ds, %d files" eol, cr, sb, st, (t > 0 ? b * 100 / t : 100), sr, eta, f
        }'
    done
) &
PROG=$!
rc=0
for p in $pids; do wait "$p" || rc=1; done
kill "$PROG" 2>/dev/null; wait "$PROG" 2>/dev/null
if [ $rc -ne 0 ] || ls "$W"/failed.* >/dev/null 2>&1; then
    echo
    # a hold that could not dial says why (and where to dial instead); any other end of it
    # (the destination's disk filled, say) is the streams' to tell
    if [ -n "$LATE" ]; then
        read -r ans < "$W/m.ready"
        LATE=
        [ "$ans" = ok ] || { cp "$W/hold.err" "$W/err" 2>/dev/null; ! undialled || cannot_reach; }
    fi
    why=$(for f in "$W"/err.*; do [ -s "$f" ] && said "$f"; done | head -n 1)
    [ -z "$GPUDASH_SEND_ONLY" ] || fail "the chain broke ($why): each destination is checked and completed from this host"
    # A stream whose ssh failed (255: the connection, not the receiving end) or a host that
    # no longer answers is a lost connection: the partial copy is kept for the next run (and
    # the key removed now if the destination answers again; its job may be gone).
    if grep -qx 255 "$W"/failed.* 2>/dev/null \
        || { ! remote 20 ping </dev/null >/dev/null 2>&1 && ! kill -0 "$HOLD" 2>/dev/null; }; then
        remote 20 leave </dev/null >/dev/null 2>&1
        fail "the connection to $GPUDASH_DEST was lost ($why): the partial copy is kept there; run the copy again to resume"
    fi
    remote 60 abort </dev/null >/dev/null 2>&1
    fail "sending failed: $why; the partial copy is removed"
fi
[ -z "$LATE" ] || answered
t1=$(date +%s)
el=$((t1 - t0)); [ $el -gt 0 ] || el=1
printf '%scopied %s in %ss (%s/s), %s files\n' "$CR" "$(human "$TOTAL")" "$el" "$(human $((TOTAL / el)))" "$FILES"
[ -z "$GPUDASH_SEND_ONLY" ] || exit 0
echo "verifying: sha256, mode and link target of every entry, on both hosts"
seal_and_prepare 2> "$W/err.prep" &
PREP=$!
if [ -n "$SRCM" ]; then
    wait "$SRCM" || fail "cannot hash $GPUDASH_PATH: $(tail -n 1 "$W/srcm.err")"
    SRCM=
elif [ ! -s "$W/src.m" ]; then
    src_manifest || fail "cannot hash $GPUDASH_PATH"
fi
wait "$PREP" || fail "the destination could not seal (links, directory modes) or hash its copy: $(said "$W/err.prep")"
verified
exit 0
"""
)

# How the source job ends once the destination has a manifest of its copy in $J/m.dst: it
# compares it with the source's and renames its copy into place (defined before the body).
_VERIFIED = r"""
verified() {
remote 600 verify < "$W/src.m" 2> "$W/err" > "$W/verify" || { cat "$W/verify"; fail "the copy on $GPUDASH_DEST is not verified"; }
cat "$W/verify"
n=$(awk -F '\t' '$2 == "f"' "$W/src.m" | wc -l)
size=$(awk -F '\t' '$2 == "f" { s += $4 } END { printf "%.0f", s }' "$W/src.m")
echo "verified: $n files ($(human "$size")), every sha256, mode and link target matches (copy ${el}s, verify $(( $(date +%s) - t1 ))s)"
}
"""

SOURCE_JOB = _VERIFIED + _SOURCE_BODY

# gpudash's own best-effort sweep after a run (the jobs do it themselves; this is a second
# chance when the destination job was killed with SIGKILL).
DEST_SWEEP = (
    SWEEP_FN
    + 'sweep "gpudash-copy-$GPUDASH_RUN"\n'
    + 'rm -f "${GPUDASH_JOBS:-$HOME/.cache/gpudash/jobs}/$GPUDASH_TASK/files/id"\n'
)

# The source's address on the way to the destination, as the destination will see it.
ROUTE = r"""
a=$(getent ahostsv4 "$GPUDASH_ADDR" 2>/dev/null | awk 'NR == 1 { print $1 }')
[ -n "$a" ] || a=$GPUDASH_ADDR
ip -o -4 route get "$a" 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/addr \1/p' | head -n 1
"""
