"""The one small async interface every transport offers.

A transport runs POSIX `sh` scripts on one host. The exec string is always the constant
`/bin/sh -s`; the script travels on stdin, so no value from config is ever parsed by the
remote user's login shell. Output comes back as raw bytes: decoding is the caller's business,
so one invalid UTF-8 byte can never tear a connection down.
"""

from __future__ import annotations

import abc
import base64
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING

from gpudash.shlib import grace, one_line

if TYPE_CHECKING:
    from gpudash.probe.script import ProbePlan
    from gpudash.probe.stream import FrameReader, RawSection

SCRIPT_COMMAND = "/bin/sh -s"


def _kill_timer(n: int) -> str:
    """A kill timer in sh for a host without `timeout`, started in the background just before
    the command replaces its shell (`exec`, so `$$` is the command's pid).

    The library's `kill_timer` (gpudash/shlib.sh, joined into one line): each second it
    checks that the command still runs; once `n` s are up it sends TERM, and the exec grace
    later KILL, to its whole process group (`kill 0`), as `timeout -k` does for its own: the
    command's children and their tools too, not only its shell. The timer is in that group
    itself, so it takes TERM (`trap :`) and ends with the KILL. The probe's sections, which
    run in groups of their own (setsid), are stopped by the script's TERM traps."""
    return (
        f'{one_line()} (trap : TERM; kill_timer {n} {grace("exec")} 0 "" $$)'
        " </dev/null >/dev/null 2>&1 &"
    )


def script_command(timeout: float | None) -> str:
    """The constant exec string, with the remote-side timeout when one is asked for.

    Where `timeout` is not on the host's PATH (busybox without it, a minimal image), a kill
    timer in sh stands in (see `_kill_timer`).

    The login shell parses this string first (OpenSSH runs `$SHELL -c COMMAND`), and it may
    not be POSIX: everything after `/bin/sh -c` is ONE single-quoted word, which fish, tcsh
    and POSIX shells all pass on untouched to /bin/sh, so it holds no `'`, no backslash (fish
    reads `\\` and `\'` inside single quotes), no `!` (csh history) and no newline (csh
    refuses one inside quotes). tests/ssh/test_login_shells.py runs it under each."""
    if timeout is None:
        return SCRIPT_COMMAND
    n = max(1, int(timeout + 0.999))
    return (
        "/bin/sh -c 'command -v timeout >/dev/null 2>&1 &&"
        f" exec timeout -k {grace('exec')} {n} {SCRIPT_COMMAND};"
        f" {_kill_timer(n)} exec {SCRIPT_COMMAND}'"
    )


# For a command that also reads data on stdin (a copy's receiving tar): sh must not read
# past its script, but a shell reading a script from a pipe buffers ahead (dash reads 8 KiB),
# swallowing the data behind it. The `read` builtin is bound by POSIX not to read past the
# newline, so the script travels as ONE base64 line that this constant command reads and
# evals; every byte after that line is left on stdin for the script's commands.
_READ_EVAL = 'IFS= read -r s && eval "$(printf %s "$s" | base64 -d)"'
INPUT_COMMAND = f"/bin/sh -c '{_READ_EVAL}'"


def input_command(timeout: float | None) -> str:
    """The constant exec string for `Transport.start_input`, with the remote-side timeout.

    Under `timeout` when the host has it; otherwise under the sh kill timer of
    `script_command`, in the shell that then reads and evals the script. The read-and-eval
    program travels as `$0` (a second single-quoted word), so that both branches run it
    without a quote inside a quote: what the login shell sees is still single-quoted words
    only (see `script_command` for fish and tcsh)."""
    if timeout is None:
        return INPUT_COMMAND
    n = max(1, int(timeout + 0.999))
    return (
        "/bin/sh -c 'command -v timeout >/dev/null 2>&1 &&"
        f' exec timeout -k {grace("exec")} {n} /bin/sh -c "$0"; {_kill_timer(n)} eval "$0"\''
        f" '{_READ_EVAL}'"
    )


def input_script(script: str) -> bytes:
    """What `input_command` expects first on stdin: the script as one base64 line."""
    return base64.b64encode(script.encode()) + b"\n"


def probe_failure(reader: FrameReader, status: int | None, timeout: float) -> str | None:
    """Why a probe's output does not count as an answer, or None when it does.

    An answer needs the script's start marker, its exit marker and a zero exit status: a
    login shell that refused the command (`ForceCommand /usr/sbin/nologin`), a missing
    program in the exec string or a shell that mangled it print neither marker, and their
    own first line is the reason the user sees (DESIGN.md "Trust")."""
    from gpudash.text import clean_line

    said = clean_line(reader.first_line)
    if reader.fatal:
        return f"probe could not start on the host ({reader.fatal} failed)"
    if status is None:
        return "connection lost during the probe"
    if not reader.started:
        why = said or "it printed nothing"
        return f"the probe did not run: {why} (exit status {status})"
    if status in (124, 137, -9, -15) and reader.exited is None:
        return f"probe timed out on the host after {timeout:g}s"
    if reader.exited is None or status != 0:
        return f"the probe script ended early (exit status {status})"
    return None


class TransportError(Exception):
    """A host could not be reached or was lost; `reason` is the one line a user sees."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RemoteProcess(abc.ABC):
    """A running `/bin/sh -s` with its script already written to stdin (stdout+stderr merged)."""

    @abc.abstractmethod
    def chunks(self) -> AsyncIterator[bytes]:
        """Yield output as it arrives (not split on lines: progress bars use `\\r`)."""

    @abc.abstractmethod
    async def wait(self) -> int | None:
        """Exit status; None when the connection was lost before the process reported one."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop reading and release the channel. Idempotent, never raises."""

    async def write(self, data: bytes) -> None:
        """Send `data` to the process's stdin, waiting while the far end is behind
        (backpressure). Only for processes from `Transport.start_input`."""
        raise TransportError("this command takes no input (start it with start_input)")

    async def write_eof(self) -> None:
        """Close the process's stdin: the reader sees end of file."""
        raise TransportError("this command takes no input (start it with start_input)")


class Transport(abc.ABC):
    """One host, one connection, reused for every command."""

    kind: str = "?"

    @abc.abstractmethod
    async def connect(self) -> None:
        """Open the connection (idempotent). Raises TransportError with a one-line reason."""

    @abc.abstractmethod
    async def start(self, script: str, *, timeout: float | None = None) -> RemoteProcess:
        """Run `script` under `/bin/sh -s`; raises TransportError when the host is gone.

        With `timeout`, the host itself enforces it (`timeout -k 5 N /bin/sh -s`): closing a
        channel does not stop a remote command, so a client-side timer alone would leak it.
        """

    async def start_input(self, script: str, *, timeout: float | None = None) -> RemoteProcess:
        """Run `script` with stdin left open behind it: `write()` feeds it, `write_eof()` ends it.

        The exec string is the constant `input_command` (see INPUT_COMMAND for why not
        `/bin/sh -s`); stdout and stderr come back merged, as from `start`.
        """
        raise TransportError(f"{self.kind}: this transport cannot stream input to a command")

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the connection. Idempotent, never raises."""

    async def output(self, script: str, *, timeout: float | None) -> tuple[bytes, int | None]:
        """Run `script` to its end: everything it printed, and its exit status (None when
        the connection was lost first). For the short control scripts of tasks."""
        process = await self.start(script, timeout=timeout)
        try:
            out = b"".join([chunk async for chunk in process.chunks()])
            return out, await process.wait()
        finally:
            await process.close()

    async def probe(self, plan: ProbePlan, *, timeout: float) -> AsyncGenerator[RawSection, None]:
        """Run the probe script and yield each section as soon as the host prints it.

        Raises TransportError when the connection is lost before the script finished; the
        sections already yielded stand.
        """
        from gpudash.probe.script import build_script
        from gpudash.probe.stream import NOTE, NOTES, FrameReader, RawSection

        reader = FrameReader(plan.nonce)
        process = await self.start(build_script(plan), timeout=timeout)
        noted = 0
        try:
            async for chunk in process.chunks():
                for section in reader.feed(chunk):
                    yield section
                for note in reader.notes[noted:]:
                    yield RawSection(NOTE, None, NOTES.get(note, note))
                noted = len(reader.notes)
            for section in reader.finish():
                yield section
            status = await process.wait()
        finally:
            await process.close()
        if failure := probe_failure(reader, status, timeout):
            raise TransportError(failure)

    async def __aenter__(self) -> Transport:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
