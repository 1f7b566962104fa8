"""The shell scripts of the job-directory protocol (`gpudash.tasks.jobs` runs them and reads
their output): launch, status, list, attach, fetch, cancel, and the wrapper that launch leaves
on the host. Each task has one directory, `$HOME/.cache/gpudash/jobs/TASK/` (mode 0700;
`GPUDASH_JOBS` on the host overrides the root):

    lock        flock held by the wrapper for the job's whole life: the liveness oracle
    run         the run id of the current (or last) run
    script.sh   the rendered task: `export K=<quoted>` lines, then the body
    files/      uploaded files (patches)
    wrapper.sh  the constant wrapper below
    wpid        the wrapper's pid (a `setsid` session leader, outside the payload's group)
    pgid        the payload's process group (its own `setsid` session), what cancel signals
    log         stdout+stderr of the payload, appended
    cancelled   marker written by cancel before it signals
    rc          "CODE[ cancelled|timeout]", written as rc.tmp + mv (atomic)

Every script here goes to the constant `/bin/sh -s` on stdin; every value in it is an
`export K=<shlex.quote(v)>` line or a `printf '%s' <quoted>` argument, never shell syntax.

Secrets never become a file on the host. The launch script holds their `export` lines in a
here-document opened as fd 3 (a pipe in dash and in bash >= 5.1; bash before 5.1 uses a temp
file it deletes as soon as it is open), the wrapper inherits that fd and hands it to the
payload as stdin, and the payload's prelude reads it (`gpudash.tasks.render`). So no exit
path (a normal end, a failure, a refused sudo, `kill -9` of the wrapper, a launch that fails
half-way) can leave a secret behind: the only copy is in a pipe that dies with its readers.
(A `secret.env` left by an older gpudash is deleted by every launch.)

Every write of the launch is checked: a full disk says `gpudash-job cannot-write FILE: ERROR`
and exit 73 instead of leaving a half-written wrapper that dies without an rc (which would
read as "killed, out of memory, or rebooted").
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from secrets import token_hex

from gpudash.shlib import GRACES
from gpudash.shlib import LIB as SHLIB
from gpudash.tasks.values import TASK_NAME

BUSY_RC = 75  # launch's exit status when a run is already going (EX_TEMPFAIL)
CANT_CREATE_RC = 73  # launch's exit status when the job dir cannot be written (EX_CANTCREAT)
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

JOB_GRACE_S: float = GRACES["job"].seconds
"""A task's TERM-to-KILL grace, at its limit and when cancelled (gpudash/shlib.py GRACES)."""

SUDO_PASSWORD_MESSAGE = "sudo needs a password on this host: configure NOPASSWD or log in as root"
SUDO_MISSING_MESSAGE = "this task needs root, but sudo is not installed and the login is not root"

# The job dir of the task named by $GPUDASH_TASK (validated: [a-z0-9_-]).
_JOB_DIR = 'J="${GPUDASH_JOBS:-$HOME/.cache/gpudash/jobs}/$GPUDASH_TASK"\n'

WRAPPER = f"""\
# gpudash job wrapper: holds the lock (fd 9, inherited), runs the payload in its own
# session, writes rc atomically. It is outside the payload's process group, so cancel
# (which signals that group) never stops it before it has written rc.
J="$GPUDASH_JOB"
echo $$ > "$J/wpid.tmp" && mv -f "$J/wpid.tmp" "$J/wpid"
{SHLIB}
finish() {{
    printf '%s\\n' "$1" > "$J/rc.tmp" && mv -f "$J/rc.tmp" "$J/rc"
    exit 0
}}
export PYTHONUNBUFFERED=1 TERM=dumb
if [ "$GPUDASH_SUDO" = 1 ] && [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "gpudash: {SUDO_MISSING_MESSAGE}" >> "$J/log"
        finish 126
    fi
    if ! sudo -n true >/dev/null 2>&1 </dev/null; then
        echo "gpudash: {SUDO_PASSWORD_MESSAGE}" >> "$J/log"
        finish 126
    fi
    : > "$J/sudo"
    GD_SUDO=1  # the library's kills may use `sudo -n kill` on the payload's group
    set -- sudo -n /bin/sh "$J/script.sh"
else
    set -- /bin/sh "$J/script.sh"
fi
T=${{GPUDASH_TIMEOUT:-0}}
GRACE={GRACES["job"].seconds}  # TERM at the limit, KILL this many seconds later (gpudash/shlib.py)
TIMER=
if [ "$T" -gt 0 ]; then
    if command -v timeout >/dev/null 2>&1; then
        set -- timeout -k "$GRACE" "$T" "$@"
    else
        TIMER=1
        printf 'gpudash: no `timeout` on PATH here: a kill timer in sh enforces the %ss limit\\n' \\
            "$T" >> "$J/log"
    fi
fi
# fd 3: the secrets' pipe from the launch (or /dev/null), the payload's stdin; the wrapper
# lets go of it at once, so it never holds a secret past the payload's start.
setsid "$@" <&3 >> "$J/log" 2>&1 3<&- 9>&- &
P=$!
exec 3<&-
echo "$P" > "$J/pgid.tmp" && mv -f "$J/pgid.tmp" "$J/pgid"
if [ -n "$TIMER" ]; then
    # as `timeout -k` would: TERM to the payload's group at the limit, KILL GRACE s later;
    # the timer checks the group each second, so it ends with it and outlives nothing
    kill_timer "$T" "$GRACE" -"$P" "$J/timedout" </dev/null >/dev/null 2>&1 9>&- &
fi
wait "$P"
rc=$?
if [ -e "$J/cancelled" ]; then
    finish "$rc cancelled"
elif [ -e "$J/timedout" ]; then
    finish "124 timeout"
elif [ "$rc" = 124 ] && [ "$T" -gt 0 ]; then
    finish "$rc timeout"
fi
finish "$rc"
"""

_STATUS_BODY = """\
status_of() {
    if [ ! -e "$J/run" ]; then echo "state none"; return; fi
    echo "run $(cat "$J/run")"
    echo "wpid $(cat "$J/wpid" 2>/dev/null)"
    if [ -e "$J/rc" ]; then
        state=finished
    elif flock -n "$J/lock" true 2>/dev/null; then
        if [ -e "$J/rc" ]; then state=finished
        elif [ -e "$J/cancelled" ]; then state=cancelled
        else state=lost; fi
    else
        state=running
    fi
    [ "$state" = finished ] && echo "rc $(cat "$J/rc")"
    echo "size $(wc -c < "$J/log" 2>/dev/null || echo 0)"
    echo "state $state"
}
"""


def check_name(task: str) -> str:
    if not TASK_NAME.match(task):  # the config's rule for names: a job dir is one
        raise ValueError(f"task name {task!r}: expected [a-z0-9][a-z0-9_-]*")
    return task


def _exports(values: Mapping[str, str | int]) -> str:
    return "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in values.items())


def _head(task: str, root: str | None) -> str:
    values: dict[str, str] = {"GPUDASH_TASK": check_name(task)}
    if root is not None:
        values["GPUDASH_JOBS"] = root
    return _exports(values) + _JOB_DIR


def _wrap(body: str) -> str:
    """`{ ...; } </dev/null`: an inner stdin reader cannot swallow the rest of the script."""
    return "{\n" + body + "} </dev/null\n"


@dataclass(frozen=True)
class Launch:
    """One run of a task as sent to the host: the rendered script and what goes beside it.

    `secrets` are `export` lines (`gpudash.tasks.render.secrets_env`), written to the job dir
    apart from the script; `files` are uploaded to `files/` (patches); `timeout` is enforced
    on the host; `root`, when set, is the jobs directory instead of the host's default
    (`GPUDASH_JOBS`). One value rather than eight keywords, from the runner to this script."""

    task: str
    script: str
    run_id: str
    secrets: str = ""
    files: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    sudo: bool = False
    root: str | None = None


def launch_script(job: Launch) -> str:
    """The one script that starts a run, or prints `busy RUN` (exit 75) when one is going.

    Each file is written through `put`, which says `gpudash-job cannot-write FILE: ERROR`
    (exit 73) when the write fails; the secrets travel in a here-document (module doc)."""
    writes = [_put("script.sh", job.script)]
    if job.files:
        writes.append(
            'e=$( { mkdir "$J/files"; } 2>&1 ) ||'
            ' { echo "gpudash-job cannot-write files: $e"; exit 73; }\n'
        )
        for name, content in job.files.items():
            if not _FILE.match(name):
                raise ValueError(f"file name {name!r}: expected [A-Za-z0-9._-]")
            writes.append(_put(f"files/{name}", content))
    writes.append(_put("wrapper.sh", WRAPPER))
    body = (
        "umask 077\n"
        + _head(job.task, job.root)
        + _exports(
            {
                "GPUDASH_RUN": job.run_id,
                "GPUDASH_TIMEOUT": int(job.timeout + 0.999) if job.timeout else 0,
                "GPUDASH_SUDO": 1 if job.sudo else 0,
            }
        )
        + "for tool in flock setsid; do\n"
        + "    command -v $tool >/dev/null 2>&1 ||"
        + ' { echo "gpudash-job missing $tool"; exit 69; }\n'
        + "done\n"
        + _PUT
        + 'e=$( { mkdir -p "$J" && chmod 700 "$J"; } 2>&1 ) ||'
        + ' { echo "gpudash-job cannot-write $J: $e"; exit 73; }\n'
        + "put lock </dev/null || exit 73\n"
        + 'exec 9>> "$J/lock"\n'
        + 'flock -n 9 || { echo "gpudash-job busy $(cat "$J/run" 2>/dev/null)";'
        + f" exit {BUSY_RC}; }}\n"
        + 'rm -rf "$J/rc" "$J/rc.tmp" "$J/cancelled" "$J/timedout" "$J/sudo" "$J/wpid" "$J/pgid"'
        + ' "$J/files"\n'
        + 'rm -f "$J/secret.env"\n'
        + "put log </dev/null || exit 73\n"
        + "".join(writes)
        + "printf '%s\\n' \"$GPUDASH_RUN\" | put run || exit 73\n"
        + 'export GPUDASH_JOB="$J"\n'
        + _secrets_fd(job.secrets)
        + 'setsid -f /bin/sh "$J/wrapper.sh" </dev/null >/dev/null 2>&1\n'
        + "exec 9>&- 3<&-\n"
        + "i=0\n"
        + 'while [ ! -s "$J/pgid" ] && [ ! -e "$J/rc" ] && [ $i -lt 200 ]; do\n'
        + "    sleep 0.05; i=$((i + 1))\n"
        + "done\n"
        + 'echo "gpudash-job launched $GPUDASH_RUN"\n'
    )
    return _wrap(body)


# `put FILE` writes its stdin to "$J/FILE", or says why it could not (the first error line of
# the redirection or of cat: "No space left on device", "Permission denied") and fails.
_PUT = """\
put() {
    e=$( { cat > "$J/$1"; } 2>&1 ) ||
        { echo "gpudash-job cannot-write $1: ${e:-write failed}" | head -n 1; return 1; }
}
"""


def _put(name: str, content: str) -> str:
    return f"printf '%s' {shlex.quote(content)} | put {name} || exit 73\n"


def _secrets_fd(secrets: str) -> str:
    """fd 3 for the wrapper: a here-document of the secrets' export lines, or /dev/null."""
    if not secrets:
        return "exec 3</dev/null\n"
    text = secrets if secrets.endswith("\n") else secrets + "\n"
    tag = "GPUDASH_SECRETS_" + token_hex(8)
    while tag in text:  # the end line must not occur in the text; random, so never in practice
        tag = "GPUDASH_SECRETS_" + token_hex(8)
    return f"exec 3<<'{tag}'\n{text}{tag}\n"


def status_script(task: str, root: str | None = None) -> str:
    return _wrap(_head(task, root) + _STATUS_BODY + "status_of\n")


def list_script(root: str | None = None) -> str:
    """Every job under the root, each as `task NAME` followed by its status lines."""
    head = _exports({"GPUDASH_JOBS": root}) if root is not None else ""
    body = (
        head
        + 'R="${GPUDASH_JOBS:-$HOME/.cache/gpudash/jobs}"\n'
        + _STATUS_BODY
        + 'for J in "$R"/*; do\n'
        + '    [ -d "$J" ] || continue\n'
        + '    echo "task ${J##*/}"\n'
        + "    status_of\n"
        + "done\n"
    )
    return _wrap(body)


def attach_script(task: str, offset: int, marker: str, root: str | None = None) -> str:
    """`marker` then the log from byte `offset` on, following it until the wrapper exits.

    Whatever the login prints first (a motd, "Could not chdir to home directory") comes
    before the marker and is dropped, so the bytes counted are the log's own."""
    return _wrap(
        _head(task, root)
        + _exports({"GPUDASH_FROM": int(offset) + 1, "GPUDASH_MARK": marker})
        + '[ -e "$J/log" ] || exit 3\n'
        + "printf '%s\\n' \"$GPUDASH_MARK\"\n"
        + 'W=$(cat "$J/wpid" 2>/dev/null)\n'
        + 'if [ -e "$J/rc" ] || [ -z "$W" ]; then exec tail -c +"$GPUDASH_FROM" "$J/log"; fi\n'
        + _FOLLOW_TO_RC
    )


# The run's end is its rc file, not the wrapper's pid: where init reaps orphans late, the
# dead wrapper lingers as a zombie that `tail --pid` takes for alive (seconds, measured in a
# sandbox). A watcher of this shell's own waits on the wrapper's lock (held for its whole
# life, after rc is written it lets go: no poll; where flock cannot, it polls rc and the
# wrapper's pid every 0.1 s) and is reaped here at once, so tail, which follows the watcher,
# ends within 0.05 s of it (its `-s`) with its last read: a poll of 0.1 s and a `-s` of 0.2 s
# added 0.15 s to the end of every task on average.
_FOLLOW_TO_RC = """\
( flock -s "$J/lock" true 2>/dev/null \\
    || while [ ! -e "$J/rc" ] && kill -0 "$W" 2>/dev/null; do sleep 0.1; done
) </dev/null >/dev/null &
H=$!
tail -c +"$GPUDASH_FROM" -f --pid="$H" -s 0.05 "$J/log" &
T=$!
wait "$H"
wait "$T"
"""


def fetch_script(task: str, offset: int, marker: str, root: str | None = None) -> str:
    """`marker`, then the log from byte `offset` to its current end, no following."""
    return _wrap(
        _head(task, root)
        + _exports({"GPUDASH_FROM": int(offset) + 1, "GPUDASH_MARK": marker})
        + '[ -e "$J/log" ] || exit 3\n'
        + "printf '%s\\n' \"$GPUDASH_MARK\"\n"
        + 'exec tail -c +"$GPUDASH_FROM" "$J/log"\n'
    )


def _look_until(done: str, seconds: float) -> str:
    """A host-side loop: `done` (a shell condition) looked at every 0.02 s until it holds or
    `seconds` of the host's clock passed (the clock read every 25 looks: a count of looks
    alone ran long by the looks' own cost on a busy host)."""
    return (
        _exports({"GPUDASH_UNTIL": max(1, round(seconds))})
        + "end=$(( $(date +%s) + GPUDASH_UNTIL )); i=0\n"
        + f"until {done}; do\n"
        + "    i=$((i + 1))\n"
        + '    [ $((i % 25)) -ne 0 ] || [ "$(date +%s)" -lt "$end" ] || break\n'
        + "    sleep 0.02\n"
        + "done\n"
    )


# A run that ended: its rc written, or its wrapper's lock let go of (killed, no rc: lost).
_ENDED = '{ [ ! -d "$J" ] || [ -e "$J/rc" ] || flock -n "$J/lock" true 2>/dev/null; }'


def end_script(task: str, seconds: float, root: str | None = None) -> str:
    """The run's status once it ended (its rc written, or its wrapper's lock let go of) or
    about `seconds` passed: one round trip in all."""
    return _wrap(_head(task, root) + _STATUS_BODY + _look_until(_ENDED, seconds) + "status_of\n")


def line_script(
    task: str, prefix: str, seconds: float, marker: str, root: str | None = None
) -> str:
    """`marker`, then the log once it has a line starting with `prefix`, or the run ended (as
    `end_script` tells it), or about `seconds` passed: one round trip that answers as soon as
    the line is written, against a round trip and a sleep per look from gpudash."""
    seen = (
        _ENDED + ' || awk -v p="$GPUDASH_PREFIX"'
        " 'index($0, p) == 1 { f = 1; exit } END { exit !f }' \"$J/log\""
    )
    return _wrap(
        _head(task, root)
        + _exports({"GPUDASH_MARK": marker, "GPUDASH_PREFIX": prefix})
        + '[ -e "$J/log" ] || exit 3\n'
        + "printf '%s\\n' \"$GPUDASH_MARK\"\n"
        + _look_until(seen, seconds)
        + 'exec cat "$J/log"\n'
    )


def cancel_script(task: str, grace: float = JOB_GRACE_S, root: str | None = None) -> str:
    """TERM the payload's process group; KILL what is left of it after `grace` seconds (a
    process that ignores TERM keeps the group alive even once the payload's shell is gone)."""
    return _wrap(
        _head(task, root)
        + _exports({"GPUDASH_GRACE": max(1, int(grace + 0.999))})
        + _STATUS_BODY
        + SHLIB
        + """\
if [ ! -e "$J/rc" ] && ! flock -n "$J/lock" true 2>/dev/null; then
    : > "$J/cancelled"
    i=0
    while [ ! -s "$J/pgid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    P=$(cat "$J/pgid" 2>/dev/null)
    GD_SUDO=; [ -e "$J/sudo" ] && GD_SUDO=1  # a payload under sudo: `sudo -n kill` may
    kill_group "$P" "$GPUDASH_GRACE"
    i=0
    while [ ! -e "$J/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
fi
status_of
"""
    )
