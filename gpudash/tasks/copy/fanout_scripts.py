"""The shell of a fan-out: one source job that feeds many destinations as a chain.

    source -> d1 -> d2 -> ... -> dN      every hop's receiving end tees the stream into its
                                         own tar and into the next hop's ssh (`recv` in
                                         `recv_script.RECV`): one pass of the bytes
    then, on every destination at once  the single copy's own run (`files/one.sh`, the
                                         `direct_scripts.SOURCE_JOB`): it finds the partial
                                         copy the chain left, sends what is missing or differs
                                         straight from the source, and verifies

So a destination that fails mid-way costs only itself: the hosts after it in the chain lose
the rest of the stream, and their own run completes them from the source (resume by size +
sha256). The source's manifest is hashed once for all of them (`GPUDASH_SRC_M`).

`files/dests` has one line per destination, in chain order: `ALIAS ADDR PORT USER BASE` (BASE:
what its destination job found at the copy's path, none, partial or final). Every
line of the job's log about one destination starts with `@dN ` (N its line number, from 1);
`@dN gpudash-copy end dN RC` is its end. gpudash shows each destination its own lines.
"""

from __future__ import annotations

# ruff: noqa: E501  (shell text: its long lines are commands and messages, kept whole to grep)
from gpudash.shlib import COPY_LIB
from gpudash.tasks.copy.direct_scripts import MANIFEST_FN

FANOUT_JOB = (
    MANIFEST_FN
    + COPY_LIB
    + r"""
F="$GPUDASH_JOB/files"
W="$GPUDASH_JOB/work"
K="$F/id"
KH="$F/known_hosts"
BEATS=
HOLDS=
mux_dir
cleanup() {
    for b in $BEATS; do kill "$b" 2>/dev/null; done
    for h in $HOLDS; do kill "$h" 2>/dev/null; done
    rm -f "$F/id" "$GPUDASH_JOB"/d*/files/id
    [ -n "$CMD" ] && rm -rf "$CMD"
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
fail() { echo "gpudash: $*"; exit 1; }
# `dest I` sets what `remote` and a destination's run need for line I of files/dests (CM:
# the control socket of its hold session, which its run's control verbs ride).
dest() {
    CM=${CMD:+$CMD/$1}
    export CM
    set -- $(sed -n "$1p" "$F/dests")
    export GPUDASH_ALIAS=$1 GPUDASH_ADDR=$2 GPUDASH_PORT=$3 GPUDASH_USER=$4 GPUDASH_BASE=$5
}
for tool in ssh tar sha256sum find sort comm awk dd mkfifo timeout sed; do
    command -v $tool >/dev/null 2>&1 || fail "$tool is not installed on the source host"
done
[ -d "$GPUDASH_PATH" ] || fail "no directory $GPUDASH_PATH on the source host"
cd "$GPUDASH_PATH" || fail "cannot enter $GPUDASH_PATH on the source host"
rm -rf "$W" "$GPUDASH_JOB"/d[0-9]*; mkdir -m 700 "$W" || fail "cannot create $W"
N=$(wc -l < "$F/dests")
echo "fan-out from this host to $N destinations"

# Every destination's hold session: its destination job removes the key when it ends. The
# chain does not wait for them (its first verbs dial on their own while a master is not up).
i=1
while [ $i -le "$N" ]; do
    dest $i
    mkfifo "$W/hold.$i" || fail "mkfifo failed"
    hold < "$W/hold.$i" > /dev/null 2>&1 &
    h=$!
    beat > "$W/hold.$i" 2>/dev/null &
    HOLDS="$HOLDS $h"; BEATS="$BEATS $!"
    eval "HOLD_$i=\"$h $!\""
    i=$((i + 1))
done
export GPUDASH_HELD=1

# The source's manifest, once for all, hashed while the chain sends (the files are in the
# page cache as tar reads them), at a lower priority than the chain's own processes.
( renice -n 10 -p "$(exec sh -c 'echo $PPID')" > /dev/null 2>&1
  manifest . "$W/src.m.tmp" && mv "$W/src.m.tmp" "$W/src.m" || : > "$W/src.m.failed" ) &
HASH=$!

# The destinations that start empty (each destination job said so) are fed by the chain, in
# their order.
CHAIN=; HOPS=; NAMES=
i=1
while [ $i -le "$N" ]; do
    set -- $(sed -n "${i}p" "$F/dests")
    if [ "$5" = none ]; then
        if [ -z "$CHAIN" ]; then CHAIN=$i; else HOPS="$HOPS $1 $2 $3 $4"; fi
        NAMES="$NAMES${NAMES:+ -> }@d$i"
    fi
    i=$((i + 1))
done
# The chain's streams: each costs every hop about four processes at the line rate (sshd
# receiving, tee, tar, ssh sending on), so this host's cores bound them: one stream per four
# cores, at most params.streams (on a 2-core rig of five hosts, 4 streams took 15.1 s and 1
# stream 14.0 s for the same fan-out, 2026-12-06; bench/bench_copy_direct.py).
CS=$(( $(nproc 2>/dev/null || echo 4) / 4 ))
[ "$CS" -ge 1 ] || CS=1
[ "$CS" -le "$GPUDASH_STREAMS" ] || CS=$GPUDASH_STREAMS
if [ -n "$CHAIN" ] && [ -n "$HOPS" ]; then
    mkdir -p "$W/chain/files" && cp "$F/id" "$F/known_hosts" "$W/chain/files/" || fail "cannot prepare the chain"
    ( dest "$CHAIN"
      GPUDASH_JOB="$W/chain" GPUDASH_HOPS="$HOPS" GPUDASH_SEND_ONLY=1 GPUDASH_CHAIN="$NAMES" \
          GPUDASH_CHAIN_STREAMS=$CS GPUDASH_DEST="@d$CHAIN" sh "$F/one.sh" )
fi

# Then every destination's own run, while each hashes what it has. Each destination's run
# has its own copy of the key (dN/files/id), removed when that run ends (and by gpudash once
# it saw that destination's end), so the first to end takes no other's; its hold session
# ends with it, so its destination job ends then, not with the last one.
i=1
while [ $i -le "$N" ]; do
    mkdir -p "$GPUDASH_JOB/d$i/files" && cp "$F/id" "$F/known_hosts" "$GPUDASH_JOB/d$i/files/" || fail "cannot prepare @d$i"
    i=$((i + 1))
done
rm -f "$F/id"
i=1
pids=
while [ $i -le "$N" ]; do
    ( dest $i
      GPUDASH_JOB="$GPUDASH_JOB/d$i" GPUDASH_SRC_M="$W/src.m" GPUDASH_LINES=1 GPUDASH_DEST="@d$i" \
          sh "$F/one.sh" 2>&1
      rc=$?
      eval "kill \$HOLD_$i" 2>/dev/null
      echo "$rc" > "$GPUDASH_JOB/d$i/rc"
      echo "gpudash-copy end d$i $rc" ) | sed -u "s/^/@d$i /" &
    pids="$pids $!"
    i=$((i + 1))
done
for p in $pids; do wait "$p"; done
wait "$HASH"
ok=$(cat "$GPUDASH_JOB"/d*/rc 2>/dev/null | grep -c '^0$')
echo "fan-out: $ok of $N destinations verified"
[ "$ok" -eq "$N" ] || exit 1
"""
)
