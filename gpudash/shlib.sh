# gpudash sh library: stopping what a remote script started (POSIX sh: dash, busybox ash, bash).
# Included by the probe, the job wrapper and its cancel, the copy's stop, and (joined into one
# line by gpudash/shlib.py) the exec string's kill timer. So that it can be joined: every
# command ends with `;` (or a word such as `do`, `then`, `{`, `||`), comments stand on lines
# of their own, and there is no single quote, backslash or `!` (the exec string's rules).
# A TARGET is what `kill` takes: PID, -PGID (a process group) or 0 (the caller's own group);
# `kill -SIG -PGID` (no `--`, no `-s`) is the one form dash, bash and busybox ash all take.
# With GD_SUDO=1 (the caller ran TARGET under sudo) a signal this user may not send is sent
# by `sudo -n kill` instead; never otherwise, so a reused pid of another user is never hit.
_gd_signal() {
    kill -"$1" "$2" 2>/dev/null && return 0;
    [ "${GD_SUDO:-}" = 1 ] && sudo -n kill -"$1" -- "$2" 2>/dev/null;
};
# A tenth of a second (a whole one where sleep takes whole seconds only); counts in _gd_w.
_gd_nap() {
    if sleep 0.1 2>/dev/null; then _gd_w=$((_gd_w + 1)); else sleep 1; _gd_w=$((_gd_w + 10)); fi;
};
# kill_wait TARGET GRACE: TERM, then KILL what is left once GRACE s are up; returns as soon
# as TARGET is gone (a process that ignores TERM keeps its group alive after its shell).
kill_wait() {
    _gd_signal TERM "$1" || return 0;
    _gd_w=0;
    while [ "$_gd_w" -lt $(($2 * 10)) ] && _gd_signal 0 "$1"; do _gd_nap; done;
    if _gd_signal 0 "$1"; then _gd_signal KILL "$1"; fi;
    return 0;
};
# kill_group PGID GRACE: kill_wait for the process group PGID (nothing when PGID is empty).
kill_group() {
    [ -n "$1" ] || return 0;
    kill_wait "-$1" "$2";
};
# kill_timer LIMIT GRACE TARGET [MARK [WATCH]]: the limit `timeout -k GRACE LIMIT` enforces,
# for a host without `timeout`: each second, end at once if WATCH (default TARGET) is gone;
# after LIMIT s, create the file MARK (when given: says the limit fired), then kill_wait.
kill_timer() {
    _gd_l=0;
    while [ "$_gd_l" -lt "$1" ]; do
        sleep 1;
        _gd_signal 0 "${5:-$3}" || return 0;
        _gd_l=$((_gd_l + 1));
    done;
    if [ -n "${4:-}" ]; then : >"$4"; fi;
    kill_wait "$3" "$2";
};
