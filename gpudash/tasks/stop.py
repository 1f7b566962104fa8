"""Stopping a task on a host: its detached run, and the service it left running on purpose.

A run still going is cancelled by the job protocol's own cancel (`jobs.cancel`: TERM to the
payload's process group, KILL after a grace). A task may also leave a *service* behind on
purpose, such as the served engine of `serve`, which outlives its job by design: the job
writes that group's id to `$JOB/service.pgid` (one integer). Stopping the task signals that
group the same way (TERM, KILL after the grace), removes the file once the group is gone,
and then checks the GPUs: none of the stopped processes may still hold GPU memory (their
compute apps gone from `nvidia-smi --query-compute-apps`), which is the orphan that makes the
next launch fail (sglang #23627).

Everything here runs over a transport as scripts on `/bin/sh -s`; the host's output is parsed
totally. Liveness is read from /proc (a zombie waiting for a late reaper is not alive), with
`kill -0` where /proc cannot be read.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gpudash.tasks import jobs
from gpudash.tasks.job_scripts import check_name
from gpudash.text import clean_line
from gpudash.transport.base import Transport, TransportError

_CONTROL_TIMEOUT_S = 30.0
GPU_WAIT_S = 10
"""How long the GPU check waits for the driver to release a dead process's memory."""
MAX_PIDS = 4096  # the pids of both groups looked at on the GPUs (a bound on what is parsed)


@dataclass(frozen=True)
class GpuRelease:
    """Whether the stopped processes still hold GPU memory. `checked` False: no nvidia-smi
    on the host (or it failed: `error`), so nothing is known, and nothing is claimed."""

    checked: bool
    pids: int  # how many processes of the stopped groups were looked for
    held: tuple[tuple[int, str], ...] = ()  # (pid, memory as nvidia-smi printed it)
    error: str | None = None

    @property
    def freed(self) -> bool:
        return self.checked and not self.held


@dataclass(frozen=True)
class StopResult:
    """What `stop` did on one host.

    `job` is the run's state before (`running` when it was cancelled); `service` what became
    of the service group: "none" (no service.pgid), "gone" (recorded, already not running:
    the stale file removed), "stopped", "survived" (still alive after KILL), "bad" (the file
    held no usable group id)."""

    host: str
    task: str
    job: str
    job_after: jobs.JobStatus | None = None
    service: str = "none"
    service_pgid: int | None = None
    service_pids: int = 0
    gpu: GpuRelease | None = None
    error: str | None = None
    state_marked: bool = False  # its serve state file now says "stopped"

    @property
    def nothing_running(self) -> bool:
        return self.error is None and self.job != "running" and self.service in ("none", "gone")

    @property
    def ok(self) -> bool:
        """Something was running and all of it stopped (and freed its GPU memory, where the
        host could say)."""
        if self.error is not None or self.nothing_running or self.service in ("survived", "bad"):
            return False
        if self.job == "running" and (self.job_after is None or not self.job_after.done):
            return False
        return self.gpu is None or not self.gpu.held


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


_PID = re.compile(r"[0-9]{1,10}")


def parse_pids(text: str) -> tuple[int, ...]:
    """`pid N` lines -> the pids (at most MAX_PIDS); anything else is ignored."""
    found: list[int] = []
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "pid" and _PID.fullmatch(value.strip()) and len(found) < MAX_PIDS:
            found.append(int(value.strip()))
    return tuple(found)


@dataclass(frozen=True)
class ServiceOutcome:
    state: str  # none | gone | stopped | survived | bad
    pgid: int | None
    pids: tuple[int, ...]
    gpu: GpuRelease | None
    state_file: bool = False  # the serve state file was marked "stopped"


def parse_service(text: str, run_pids: int = 0) -> ServiceOutcome:
    """The service script's lines -> what became of the group and the GPU memory; total."""
    state, pgid = "none", None
    spids: list[int] = []
    held: list[tuple[int, str]] = []
    gpu_word: str | None = None
    error: str | None = None
    marked = False
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        value = value.strip()
        if key == "service-bad":
            state = "bad"
        elif key == "service" and _PID.fullmatch(value):
            pgid = int(value)
        elif key == "service-state" and value in ("gone", "stopped", "survived"):
            state = value
        elif key == "spid" and _PID.fullmatch(value) and len(spids) < MAX_PIDS:
            spids.append(int(value))
        elif key == "gpu-held" and len(held) < MAX_PIDS:
            pid, _, memory = value.partition(" ")
            if _PID.fullmatch(pid):
                held.append((int(pid), clean_line(memory)[:40] or "?"))
        elif key == "gpu":
            gpu_word = value
        elif key == "state-file" and value == "stopped":
            marked = True
        elif key == "gpu-error":
            gpu_word, error = "error", clean_line(value)[:200] or "nvidia-smi failed"
    pids = run_pids + len(spids)
    gpu: GpuRelease | None
    if gpu_word == "checked":
        gpu = GpuRelease(True, pids, tuple(held))
    elif gpu_word == "no-smi":
        gpu = GpuRelease(False, pids, error="no nvidia-smi on the host")
    elif gpu_word == "error":
        gpu = GpuRelease(False, pids, error=error)
    else:
        gpu = None
    return ServiceOutcome(state, pgid, tuple(spids), gpu, marked)


async def stop(
    host: str,
    transport: Transport,
    task: str,
    *,
    grace: float = 10.0,
    root: str | None = None,
    gpu_wait: int = GPU_WAIT_S,
) -> StopResult:
    """Cancel the task's run on the host if it is going, then stop its service group if it
    left one, and check the GPU memory they held. Never raises for the host's sake: a lost
    connection or a broken job dir is the result's `error`."""
    try:
        await transport.connect()
        before = await jobs.status(transport, task, root=root)
        pids: tuple[int, ...] = ()
        after: jobs.JobStatus | None = None
        if before.state == "running":
            out, code = await transport.output(
                survey_script(task, root), timeout=_CONTROL_TIMEOUT_S
            )
            pids = parse_pids(out.decode(errors="replace")) if code is not None else ()
            after = await jobs.cancel(transport, task, grace=grace, root=root)
        cancelled = after is not None and after.done
        script = service_script(task, pids, grace, root, gpu_wait, cancelled=cancelled)
        out, code = await transport.output(script, timeout=2 * grace + gpu_wait + 30)
        if code is None:
            raise TransportError("connection lost while stopping the service")
    except TransportError as exc:
        return StopResult(host, task, "unknown", error=exc.reason)
    except jobs.JobError as exc:
        return StopResult(host, task, "unknown", error=str(exc))
    outcome = parse_service(out.decode(errors="replace"), len(pids))
    return StopResult(
        host,
        task,
        before.state,
        job_after=after,
        service=outcome.state,
        service_pgid=outcome.pgid,
        service_pids=len(outcome.pids),
        gpu=outcome.gpu,
        state_marked=outcome.state_file,
    )


def describe(result: StopResult) -> str:
    """The one line `gpudash stop` prints for a host."""
    if result.error is not None:
        return f"not stopped: {clean_line(result.error)[:300]}"
    if result.nothing_running:
        stale = " (its service group was already gone: record removed)"
        return "nothing running" + (stale if result.service == "gone" else "")
    said: list[str] = []
    if result.job == "running":
        after = result.job_after
        if after is not None and after.done:
            rc = f" rc={after.rc}" if after.rc is not None else ""
            said.append(f"run stopped ({after.state}{rc})")
        else:
            said.append(f"run NOT stopped (state {after.state if after else 'unknown'})")
    if result.service == "bad":
        said.append("service.pgid holds no usable process group: nothing signalled")
    elif result.service in ("stopped", "survived"):
        n = result.service_pids
        group = f"service group {result.service_pgid} ({n} process{'es' if n != 1 else ''})"
        word = "stopped" if result.service == "stopped" else "STILL ALIVE after KILL"
        said.append(f"{group} {word}")
    gpu = result.gpu
    if gpu is not None:
        if gpu.held:
            who = ", ".join(f"pid {p} {m}" for p, m in gpu.held[:4])
            said.append(f"GPU memory STILL HELD by {who}")
        elif gpu.checked:
            said.append(f"GPU memory freed (no compute app of its {gpu.pids} pid(s) left)")
        else:
            said.append(f"GPU memory not checked: {gpu.error}")
    return "; ".join(said)
