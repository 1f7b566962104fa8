"""The job-directory protocol on the host: launch detached, status, attach from an offset, cancel.

A task runs on the host as a *job*, detached from the SSH channel that started it, so that a
dropped connection or gpudash quitting does not stop it. The scripts that do it, and the
directory each task has on the host, are in `gpudash.tasks.job_scripts`; this module runs them
over a transport and parses what they print (host output: untrusted, parsed totally).

States: `running` (lock held), `finished` (rc present), `cancelled` (lock free, no rc, the
cancel marker), `lost` (lock free, no rc: the wrapper was killed, OOM, reboot), `none`.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from secrets import token_hex

from gpudash.tasks.job_scripts import (
    BUSY_RC,
    CANT_CREATE_RC,
    JOB_GRACE_S,
    Launch,
    attach_script,
    cancel_script,
    end_script,
    fetch_script,
    launch_script,
    line_script,
    list_script,
    status_script,
)
from gpudash.text import clean_line
from gpudash.transport.base import Transport, TransportError

_CONTROL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class JobStatus:
    """What the job directory says now. `size` is the log's length in bytes."""

    task: str
    state: str  # none | running | finished | cancelled | lost
    run: str | None = None
    rc: int | None = None
    reason: str | None = None  # "cancelled" or "timeout" when the rc file says so
    size: int = 0
    wpid: int | None = None

    @property
    def done(self) -> bool:
        return self.state in ("finished", "cancelled", "lost")


@dataclass(frozen=True)
class Launched:
    """`busy` is True when a run was already in progress: `run` is that run, to attach to."""

    run: str | None
    busy: bool


def new_run_id() -> str:
    """A run's id: when it started (sortable), and random bits so two starts never share it."""
    return time.strftime("%Y%m%dT%H%M%S") + "-" + token_hex(3)


class JobError(Exception):
    """The host could not run the job machinery (missing flock/setsid, unwritable HOME)."""


class JobDirUnwritable(JobError):
    """The launch could not write a file of the job dir; `reason` is the host's own error
    ("No space left on device", "Permission denied"), `file` the file it was writing."""

    def __init__(self, file: str, reason: str) -> None:
        super().__init__(f"cannot write the job dir: {reason}")
        self.file = file
        self.reason = reason

    def on(self, host: str) -> str:
        """The one line a user reads: `cannot write the job dir on HOST: REASON`."""
        return f"cannot write the job dir on {host}: {self.reason}"


def _unwritable(detail: str) -> JobDirUnwritable:
    """`FILE: TOOL: ...: ERROR` (what the launch's `put` says) as a JobDirUnwritable: the
    error is the text after the last `: `, as cat, mkdir and the shell all end with strerror."""
    file, _, error = detail.partition(": ")
    reason = error.rsplit(": ", 1)[-1].strip() or "write failed"
    return JobDirUnwritable(clean_line(file)[:200], clean_line(reason)[:200])


def parse_status(task: str, text: str) -> JobStatus:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        fields[key] = value.strip()
    return _status(task, fields)


def _status(task: str, fields: Mapping[str, str]) -> JobStatus:
    rc: int | None = None
    reason = None
    if "rc" in fields:
        code, _, reason_text = fields["rc"].partition(" ")
        rc = _ascii_int(code, signed=True)
        reason = reason_text or None
    state = fields.get("state", "none")
    if state == "finished" and reason == "cancelled":
        state = "cancelled"
    size = fields.get("size", "0")
    wpid = fields.get("wpid", "")
    return JobStatus(
        task,
        state,
        run=fields.get("run") or None,
        rc=rc,
        reason=reason,
        size=_ascii_int(size) or 0,
        wpid=_ascii_int(wpid),
    )


def _ascii_int(text: str, *, signed: bool = False) -> int | None:
    """An ASCII decimal, else None: `str.isdigit` also accepts "²", which `int` rejects."""
    pattern = r"-?[0-9]{1,18}" if signed else r"[0-9]{1,18}"
    return int(text) if re.fullmatch(pattern, text) else None


def parse_list(text: str) -> list[JobStatus]:
    jobs: list[JobStatus] = []
    task: str | None = None
    fields: dict[str, str] = {}
    for line in [*text.splitlines(), "task"]:
        key, _, value = line.partition(" ")
        if key == "task":
            if task is not None:
                jobs.append(_status(task, fields))
            task, fields = value.strip() or None, {}
        elif task is not None:
            fields[key] = value.strip()
    return jobs


def _marker() -> str:
    return "gpudash-log-" + token_hex(8)


class _MarkerCut:
    """Drops everything up to and including the first `marker` line."""

    def __init__(self, marker: str) -> None:
        self._marker = marker.encode() + b"\n"
        self._head = b""
        self.found = False

    def feed(self, chunk: bytes) -> bytes:
        if self.found:
            return chunk
        self._head += chunk
        at = self._head.find(self._marker)
        if at < 0:
            return b""
        self.found = True
        rest = self._head[at + len(self._marker) :]
        self._head = b""
        return rest


def _lost(status: int | None, what: str) -> None:
    if status is None:
        raise TransportError(f"connection lost during {what}")


async def launch(transport: Transport, job: Launch) -> Launched:
    """Start a run, or find the one already going (`busy`). Raises JobError, TransportError."""
    out, status = await transport.output(launch_script(job), timeout=_CONTROL_TIMEOUT_S)
    _lost(status, "launch")
    lines = out.decode(errors="replace").splitlines()
    said = next((line for line in reversed(lines) if line.startswith("gpudash-job ")), "")
    words = said.split(" ", 2)[1:]
    if status == 0 and words[:1] == ["launched"]:
        return Launched(words[1] if len(words) > 1 else job.run_id, busy=False)
    if status == BUSY_RC and words[:1] == ["busy"]:
        return Launched(words[1] if len(words) > 1 and words[1] else None, busy=True)
    if status == CANT_CREATE_RC and words[:1] == ["cannot-write"]:
        raise _unwritable(words[1] if len(words) > 1 else "")
    detail = " ".join(words) or (lines[-1] if lines else f"exit status {status}")
    raise JobError(f"could not start the job: {clean_line(detail)[:300]}")


async def status(transport: Transport, task: str, *, root: str | None = None) -> JobStatus:
    out, code = await transport.output(status_script(task, root), timeout=_CONTROL_TIMEOUT_S)
    _lost(code, "status")
    return parse_status(task, out.decode(errors="replace"))


async def list_jobs(transport: Transport, *, root: str | None = None) -> list[JobStatus]:
    """Every job directory on the host: what gpudash finds on a restart."""
    out, code = await transport.output(list_script(root), timeout=_CONTROL_TIMEOUT_S)
    _lost(code, "listing jobs")
    return parse_list(out.decode(errors="replace"))


async def attach(
    transport: Transport,
    task: str,
    offset: int,
    *,
    root: str | None = None,
    timeout: float = 600.0,
) -> AsyncIterator[bytes]:
    """Log bytes from `offset` until the job ends (or `timeout`: then call again).

    Raises TransportError when the connection drops; bytes already yielded stand, so the
    caller resumes from its own count of them.
    """
    marker = _marker()
    process = await transport.start(attach_script(task, offset, marker, root), timeout=timeout)
    cut = _MarkerCut(marker)
    try:
        async for chunk in process.chunks():
            data = cut.feed(chunk)
            if data:
                yield data
        code = await process.wait()
    finally:
        await process.close()
    _lost(code, "attach")
    if not cut.found and code == 0:
        raise TransportError("attach: the host's reply lacked its start marker")


async def fetch(transport: Transport, task: str, offset: int, *, root: str | None = None) -> bytes:
    marker = _marker()
    out, code = await transport.output(
        fetch_script(task, offset, marker, root), timeout=_CONTROL_TIMEOUT_S
    )
    _lost(code, "log fetch")
    cut = _MarkerCut(marker)
    data = cut.feed(out)
    if not cut.found:
        raise TransportError(f"log fetch: no log on the host (exit status {code})")
    return data


async def wait_end(
    transport: Transport, task: str, seconds: float, *, root: str | None = None
) -> JobStatus:
    """The run's status once it ended or `seconds` passed (then `done` is False)."""
    script = end_script(task, seconds, root)
    out, code = await transport.output(script, timeout=seconds + _CONTROL_TIMEOUT_S)
    _lost(code, "end wait")
    return parse_status(task, out.decode(errors="replace"))


async def wait_line(
    transport: Transport, task: str, prefix: str, seconds: float, *, root: str | None = None
) -> bytes:
    """The run's log once it has a line starting with `prefix`, or the run ended, or `seconds`
    passed (the caller reads which from the log). Raises TransportError."""
    marker = _marker()
    script = line_script(task, prefix, seconds, marker, root)
    out, code = await transport.output(script, timeout=seconds + _CONTROL_TIMEOUT_S)
    _lost(code, "log wait")
    cut = _MarkerCut(marker)
    data = cut.feed(out)
    if not cut.found:
        raise TransportError(f"log wait: no log on the host (exit status {code})")
    return data


async def cancel(
    transport: Transport, task: str, *, grace: float = JOB_GRACE_S, root: str | None = None
) -> JobStatus:
    """Stop the run's whole process group (TERM, KILL after `grace`); its status after."""
    script = cancel_script(task, grace, root)
    out, code = await transport.output(script, timeout=grace + _CONTROL_TIMEOUT_S)
    _lost(code, "cancel")
    return parse_status(task, out.decode(errors="replace"))
