# gpudash sh library, the copy's part: sessions to the destination under a direct copy's
# one-use key (POSIX sh: dash, busybox ash, bash). Included only by the copy's scripts (the
# source job, a fan-out's job): the probe and the job wrapper include shlib.sh alone, so their
# scripts do not grow. gpudash/shlib.py puts GD_SSH_GRACE (its GRACES table) above it.
#
# What the caller sets: K (the private key), KH (the known_hosts holding the destination's
# key), GPUDASH_ALIAS (that key's name in KH; default gpudash-copy-dest), GPUDASH_ADDR,
# GPUDASH_PORT and GPUDASH_USER (what to dial), CM (a control socket, or empty: `mux_dir`).
#
# `_ssh SECONDS MASTER SOCKET ARGS...`: one ssh to the destination under `timeout -k`
# (SECONDS 0: no limit), trusting only the host key in KH, no agent, no config, no prompt;
# MASTER and SOCKET are its ControlMaster and ControlPath. The ciphers that run on the CPU's
# AES instructions first. ServerAlive: a link silent for 15 s ends the session.
_ssh() {
    t=$1 m=$2 p=$3
    shift 3
    timeout -k "$GD_SSH_GRACE" "$t" ssh -i "$K" -F /dev/null -o IdentitiesOnly=yes -o IdentityAgent=none \
        -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$KH" \
        -o GlobalKnownHostsFile=/dev/null -o HostKeyAlias="${GPUDASH_ALIAS:-gpudash-copy-dest}" \
        -o ServerAliveInterval=5 -o ServerAliveCountMax=3 -o ConnectTimeout=15 -o LogLevel=ERROR \
        -o ControlMaster="$m" -o ControlPath="$p" \
        -c aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com \
        -p "$GPUDASH_PORT" -l "$GPUDASH_USER" "$GPUDASH_ADDR" "$@"
}
# `remote SECONDS VERB [ARGS]`: one session on the destination. The control verbs (manifest,
# mkdirs, seal, prepare, verify...) ride the hold session's connection (`hold`: an OpenSSH
# ControlMaster on the socket $CM, in a private directory of its own), one round trip each
# instead of a handshake each: 0.2 s a verb on a 2-core VM, five of them on a copy's critical
# path (measured in the rig 2026-12-06). Where that master is not up yet or gone (no socket,
# or a stale one), ssh dials on its own. The key's forced command and `restrict` hold for
# every session of a connection.
remote() { t=$1; shift; _ssh "$t" no "${CM:-none}" "$@"; }
# `dial SECONDS VERB [ARGS]`: a stream's own connection, never the master: each stream's
# encryption then runs in its own process (one master would be one core).
dial() { t=$1; shift; _ssh "$t" no none "$@"; }
# `hold [ARGS]`: the hold session (no limit: the destination job watches it), the master on
# $CM when there is one.
hold() {
    if [ -n "$CM" ]; then _ssh 0 yes "$CM" hold "$@"; else _ssh 0 no none hold "$@"; fi
}
# `mux_dir`: a private directory for the control socket, short enough for a socket's path (a
# long one would end the master, and with it the hold): CMD, and CM in it ("" where none can
# be made).
mux_dir() {
    CMD=$(mktemp -d /tmp/gpudash-cm.XXXXXX 2>/dev/null) || CMD=
    CM=${CMD:+$CMD/s}
}
# `beat`: a dot every 2 s on stdout, a hold session's heartbeat, until TERM. Its sleep holds
# no end of stdout: killed, the beat lets the hold see its end at once (a plain `sleep 2`
# loop kept the fifo open up to 2 s after, and a fan-out's destination waited that long).
beat() {
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    while :; do
        sleep 2 </dev/null >/dev/null 2>&1 &
        s=$!
        wait "$s" && printf . || exit 0
    done
}
