"""Stopping a task on a host: its detached run, and the service it left running on purpose.

A run still going is cancelled by the job protocol's own cancel (`jobs.cancel`: TERM to the
payload's process group, KILL after a grace). A task may also leave a *service* behind on
purpose, such as the served engine of `serve`, which outlives its job by design: the job
writes that group's id to `$JOB/service.pgid` (one integer). Stopping the task signals that
group the same way (TERM, KILL after the grace), removes the file once the group is gone,
and then checks the GPUs: none of the stopped processes may still hold GPU memory (their
compute apps gone from `nvidia-smi --query-compute-apps`), which is the orphan that makes the
next launch fail (sglang #23627).

Where a serve state file describes what was stopped, it is marked "stopped", so that a later
probe reads a stop and not an engine that died. The scripts are in `gpudash.tasks.stop_scripts`;
they run over a transport on `/bin/sh -s`, and the host's output is parsed totally here.
Liveness is read from /proc (a zombie waiting for a late reaper is not alive), with `kill -0`
where /proc cannot be read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudash.tasks import jobs
from gpudash.tasks.stop_scripts import GPU_WAIT_S, MAX_PIDS, service_script, survey_script
from gpudash.text import clean_line
from gpudash.transport.base import Transport, TransportError

_CONTROL_TIMEOUT_S = 30.0


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
