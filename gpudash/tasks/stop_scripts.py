"""The shell scripts of `gpudash stop` (`gpudash.tasks.stop` runs them and reads their output):
the survey of a running job's process group, and the stop of the service group a job left in
`$JOB/service.pgid`, with the GPU memory check and the serve state file's "stopped".

Every script goes to the constant `/bin/sh -s`; every value in it is an
`export K=<shlex.quote(v)>` line, never shell syntax.
"""

from __future__ import annotations

import shlex

from gpudash.tasks.job_scripts import check_name

GPU_WAIT_S = 10
"""How long the GPU check waits for the driver to release a dead process's memory."""
MAX_PIDS = 4096  # the pids of both groups looked at on the GPUs (a bound on what is parsed)


def _head(task: str, root: str | None, **values: str | int) -> str:
    exports = {"GPUDASH_TASK": check_name(task), **values}
    if root is not None:
        exports["GPUDASH_JOBS"] = root
    lines = "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in exports.items())
    return lines + 'J="${GPUDASH_JOBS:-$HOME/.cache/gpudash/jobs}/$GPUDASH_TASK"\n'


# `gd_members PGID` prints the pids of that process group that are alive (not zombies), read
# from /proc/PID/stat with the `read` builtin (no fork per process): the fields after the
# command's name, which may hold spaces and parentheses, are `state ppid pgrp ...`.
_MEMBERS = r"""
gd_members() {
    for d in /proc/[0-9]*; do
        IFS= read -r s 2>/dev/null < "$d/stat" || continue
        s=${s##*) }
        set -f; set -- $s; set +f
        [ "$3" = "$GD_G" ] && [ "$1" != Z ] && echo "${d#/proc/}"
    done
    return 0
}
members() { GD_G=$1; gd_members; }
"""

_SURVEY = """
P=$(cat "$J/pgid" 2>/dev/null)
case $P in ''|*[!0-9]*) P= ;; esac
[ -n "$P" ] && [ "$P" -gt 1 ] && members "$P" | sed 's/^/pid /'
exit 0
"""


def survey_script(task: str, root: str | None = None) -> str:
    """The pids of the run's payload group, as `pid N` lines (before it is cancelled: its
    processes are looked for on the GPUs afterwards)."""
    return "{\n" + _head(task, root) + _MEMBERS + _SURVEY + "} </dev/null\n"


_SERVICE = """
S=
SS=
if [ -e "$J/service.pgid" ]; then
    S=$(head -c 32 "$J/service.pgid" 2>/dev/null)
    case $S in
        ''|*[!0-9]*|0*|1) echo "service-bad"; S= ;;  # `kill -1` would be every process
        *) [ ${#S} -le 9 ] || { echo "service-bad"; S=; } ;;
    esac
fi
M=
if [ -n "$S" ]; then
    echo "service $S"
    M=$(members "$S")
    alive() {
        if [ -r /proc/self/stat ]; then [ -n "$(members "$S")" ]; else kill -0 -"$S" 2>/dev/null; fi
    }
    signal() {  # dash's kill takes no `--`; /bin/kill under sudo needs it
        kill -"$1" -"$S" 2>/dev/null && return 0
        [ -e "$J/sudo" ] && sudo -n kill -"$1" -- -"$S" 2>/dev/null
    }
    if ! alive; then
        SS=gone
    else
        signal TERM
        i=0
        while alive && [ $i -lt "$GPUDASH_GRACE" ]; do sleep 0.1; i=$((i + 1)); done
        if alive; then signal KILL; fi
        i=0
        while alive && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        if alive; then SS=survived; else SS=stopped; fi
    fi
    echo "service-state $SS"
    alive || rm -f "$J/service.pgid"
    for p in $M; do echo "spid $p"; done
fi
# The serve state file says "stopped" once what it describes was stopped here, so that a
# probe reads a stop, not an engine that died ("exited"): the top-level "state" and
# "updated" of the supervisor's one-line JSON, rewritten as tmp + mv, like it writes it.
F="$HOME/.cache/gpudash/serve/$GPUDASH_TASK.json"
if [ -f "$F" ] && [ "$SS" != survived ] && { [ -n "$SS" ] || [ "$GPUDASH_CANCELLED" = 1 ]; }; then
    now=$(date +%s)
    umask 077  # the state file is 0600, as the supervisor writes it
    up='s/"updated": *[0-9.eE+-]*/"updated": '"$now"'/'
    if sed -e 's/"state": *"[a-z]*"/"state": "stopped"/' -e "$up" "$F" > "$F.tmp.$$" &&
        mv -f "$F.tmp.$$" "$F"; then
        echo "state-file stopped"
    else
        rm -f "$F.tmp.$$"
    fi
fi
ALL=" $GPUDASH_PIDS $(echo $M) "
if [ -z "$(echo $ALL)" ]; then
    echo "gpu none"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu no-smi"
else
    i=0
    while :; do
        out=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1)
        rc=$?
        held=
        [ $rc = 0 ] && held=$(printf '%s\\n' "$out" | while IFS=, read -r p mem; do
            p=$(echo $p)
            case "$ALL" in *" $p "*) echo "gpu-held $p $(echo $mem)" ;; esac
        done)
        if [ $rc != 0 ] || [ -z "$held" ] || [ $i -ge "$GPUDASH_GPU_WAIT" ]; then break; fi
        sleep 1; i=$((i + 1))
    done
    if [ $rc = 0 ]; then
        [ -n "$held" ] && printf '%s\\n' "$held"
        echo "gpu checked"
    else
        printf 'gpu-error %s\\n' "$(printf '%s' "$out" | head -n 1)"
    fi
fi
"""


def service_script(
    task: str,
    pids: tuple[int, ...] = (),
    grace: float = 10.0,
    root: str | None = None,
    gpu_wait: int = GPU_WAIT_S,
    *,
    cancelled: bool = False,
) -> str:
    """Stop the group in `$JOB/service.pgid` (TERM, KILL after `grace`), remove the file once
    it is gone, then look for the stopped processes (`pids` of the run, and the service's
    own) among the GPUs' compute apps, waiting up to `gpu_wait` s for the driver."""
    values: dict[str, str | int] = {
        "GPUDASH_GRACE": max(1, int(grace * 10)),
        "GPUDASH_PIDS": " ".join(str(p) for p in pids[:MAX_PIDS]),
        "GPUDASH_GPU_WAIT": max(0, int(gpu_wait)),
        "GPUDASH_CANCELLED": 1 if cancelled else 0,
    }
    return "{\n" + _head(task, root, **values) + _MEMBERS + _SERVICE + "} </dev/null\n"
