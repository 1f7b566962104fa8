"""The machine gpudash runs on: asyncio subprocesses, and NVML read in-process.

With no config gpudash triages this machine. Its GPU section comes from NVML through
`pynvml` when the library loads (no nvidia-smi process, ~ms), else from the same
`nvidia-smi` commands the remote probe runs; both paths parse to the same result.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
from collections.abc import AsyncGenerator, AsyncIterator

from gpudash.aio import merge
from gpudash.probe.script import ProbePlan
from gpudash.probe.stream import RawSection
from gpudash.transport.base import (
    RemoteProcess,
    Transport,
    TransportError,
    input_command,
    input_script,
    script_command,
)

_KILL_GRACE_S = 2.0


class LocalProcess(RemoteProcess):
    def __init__(self, proc: asyncio.subprocess.Process, *, writable: bool = False) -> None:
        self._proc = proc
        self._writable = writable

    async def chunks(self) -> AsyncIterator[bytes]:
        assert self._proc.stdout is not None
        while chunk := await self._proc.stdout.read(65536):
            yield chunk

    async def write(self, data: bytes) -> None:
        """Send to stdin, waiting while the pipe is full (backpressure)."""
        if not self._writable:
            await super().write(data)
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise TransportError(f"cannot write to the command: {exc}") from exc

    async def write_eof(self) -> None:
        if not self._writable:
            await super().write_eof()
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._proc.stdin.close()

    async def wait(self) -> int | None:
        return await self._proc.wait()

    async def close(self) -> None:
        """Stop the whole process group: the script's background sections too."""
        if self._proc.returncode is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, sig)
            try:
                await asyncio.wait_for(self._proc.wait(), _KILL_GRACE_S)
                return
            except asyncio.TimeoutError:
                continue


class LocalTransport(Transport):
    kind = "local"

    def __init__(self, *, use_nvml: bool = True) -> None:
        self.use_nvml = use_nvml

    async def connect(self) -> None:
        return None

    async def start(self, script: str, *, timeout: float | None = None) -> RemoteProcess:
        return await self._start(script_command(timeout), script.encode(), eof=True)

    async def start_input(self, script: str, *, timeout: float | None = None) -> RemoteProcess:
        return await self._start(input_command(timeout), input_script(script), eof=False)

    async def _start(self, command: str, head: bytes, *, eof: bool) -> RemoteProcess:
        # `exec`: the shell `-c` runs in must become the command, or a kill of this process
        # group reaches only that shell: dash does not exec a last command itself, and
        # `timeout` puts itself and the script in a group of its own.
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_shell(
                f"exec {command}",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Cancelled mid-spawn, asyncio would kill only the shell and then wait for its
            # pipes, which its background sections hold open until their timeouts (a minute
            # for a quit at start-up): let the spawn finish, then stop the whole group.
            with contextlib.suppress(OSError):
                await LocalProcess(await spawn).close()
            raise
        except OSError as exc:
            raise TransportError(f"cannot start /bin/sh: {exc.strerror or exc}") from exc
        assert proc.stdin is not None
        try:
            proc.stdin.write(head)
            await proc.stdin.drain()
            if eof:
                proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the shell died at once; its exit status tells why
        except BaseException:
            await LocalProcess(proc).close()
            raise
        return LocalProcess(proc, writable=not eof)

    async def probe(self, plan: ProbePlan, *, timeout: float) -> AsyncGenerator[RawSection, None]:
        """The script for every section but gpus, started at once; NVML answers gpus
        in-process meanwhile, or, where it cannot, a second script does.

        The script does not wait for NVML to load (tens of ms on a GPU server): its slowest
        tool (`nvidia-smi topo -m`) decides when the last panel fills."""
        if not (self.use_nvml and "gpus" in plan.names):
            async for section in super().probe(plan, timeout=timeout):
                yield section
            return
        rest = tuple(s for s in plan.sections if s.name != "gpus")
        gpus = tuple(s for s in plan.sections if s.name == "gpus")
        streams = [self._gpus(dataclasses.replace(plan, sections=gpus), timeout)]
        if rest:
            script = super().probe(dataclasses.replace(plan, sections=rest), timeout=timeout)
            streams.insert(0, script)
        async for section in merge(streams, reraise=True):
            yield section

    async def _gpus(self, plan: ProbePlan, timeout: float) -> AsyncIterator[RawSection]:
        from gpudash.probe import nvml

        if await nvml.available():
            yield await asyncio.to_thread(nvml.section, plan.nonce)
            return
        async for section in super().probe(plan, timeout=timeout):
            yield section

    async def close(self) -> None:
        return None
