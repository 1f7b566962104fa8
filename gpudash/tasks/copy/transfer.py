"""The copy task: a directory (a venv, a model folder) from one host to another, via gpudash.

    source: tar -cf - .  ==SSH==>  gpudash  ==SSH==>  destination: tar -xpf - -C DEST.tmp

Both ends run attached, over the SSH connections gpudash already holds, each under the host's
own `timeout -k` and in its own process group; gpudash only moves bytes between them (with
backpressure: the source is read no faster than the destination takes it). Then the sha256 of
every file, the file list, link targets and modes are compared between the two hosts; only a
copy that matches is renamed into place. A cancel, a timeout, a failure or a lost connection
stops both ends by process group and removes the partial copy.

Unlike the other tasks a copy is not a detached job: its bytes flow through gpudash, so it
ends when gpudash does (and cleans up after itself on the destination when it can).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets as _secrets
import time
from collections.abc import AsyncIterator, Callable

from gpudash.aio import deadline
from gpudash.tasks.copy import scripts as cs
from gpudash.tasks.copy.params import CopyParams
from gpudash.text import is_uint
from gpudash.transport.base import RemoteProcess, Transport, TransportError

PROGRESS_EVERY_S = 0.25
CONTROL_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


class CopyFailed(Exception):
    """A step failed; the message is the line the user sees (rc: the task's exit code)."""

    def __init__(self, message: str, rc: int = 1) -> None:
        super().__init__(message)
        self.rc = rc


def size_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class _Marked:
    """A process's output: login noise, the `MARK words...` header line, then the rest."""

    def __init__(self, process: RemoteProcess, marker: str) -> None:
        self._chunks = process.chunks().__aiter__()
        self._marker = marker.encode() + b" "
        self.noise = b""

    async def header(self) -> tuple[list[str], bytes]:
        buf = b""
        while True:
            at = buf.find(self._marker)
            end = buf.find(b"\n", at) if at >= 0 else -1
            if end >= 0:
                self.noise = buf[:at]
                line = buf[at + len(self._marker) : end].decode(errors="replace")
                return line.split(" "), buf[end + 1 :]
            try:
                buf += await self._chunks.__anext__()
            except StopAsyncIteration:
                self.noise = buf
                return [], b""

    def rest(self) -> AsyncIterator[bytes]:
        return self._chunks


async def _manifest(
    transport: Transport, directory: str, where: str, timeout: float
) -> cs.Manifest:
    """Every entry and every file's sha256 (hashing a model takes minutes: the task's timeout)."""
    marker = "gpudash-manifest-" + _secrets.token_hex(8)
    text = cs.script(cs.MANIFEST, {"GPUDASH_DIR": directory, "GPUDASH_MARK": marker})
    out, rc = await transport.output(text, timeout=timeout)
    at = out.find(marker.encode() + b"\n")
    if rc != 0 or at < 0:
        said = out.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {rc}"]
        raise CopyFailed(f"cannot list the files on {where}: {said[0]}")
    try:
        return cs.parse_manifest(out[at + len(marker) + 1 :])
    except cs.ManifestError as exc:
        raise CopyFailed(f"cannot read the file list of {where}: {exc}") from None


def _error(words: list[str], noise: bytes, where: str) -> str:
    if words[:1] == ["error"]:
        return " ".join(words[1:])
    said = noise.decode(errors="replace").strip().splitlines()[-1:]
    return f"the copy could not start on {where}" + (f": {said[0]}" if said else "")


class Copy:
    """One run: the two processes, their process groups, and what to clean up."""

    def __init__(
        self,
        params: CopyParams,
        host: str,
        dest: Transport,
        source: Transport,
        run_id: str,
        timeout: float,
        emit: Callable[[bytes], None],
    ) -> None:
        self.p = params
        self.host = host
        self.dest_t = dest
        self.source_t = source
        self.run_id = run_id
        self.timeout = timeout
        self.emit = emit
        self.pgids: dict[str, str] = {}
        self.err_file = ""
        self._redrawn = False
        self.timed_out = False

    def say(self, text: str) -> None:
        """A line of the log; it starts a new line after a progress redraw."""
        self.emit((b"\n" if self._redrawn else b"") + text.encode())
        self._redrawn = False

    async def run(self) -> int:
        """The exit code: 0 copied and verified; 1 failed; 124 timed out."""
        ok = False
        try:
            async with deadline(self.timeout):
                await self._copy()
            ok = True
            return 0
        except TimeoutError:
            self.timed_out = True
            self.say(f"gpudash: the copy did not finish within {self.timeout:.0f}s\n")
            return 124
        except CopyFailed as exc:
            self.say(f"gpudash: {exc}\n")
            return exc.rc
        finally:
            if not ok:
                await asyncio.shield(self.stop())

    async def stop(self) -> None:
        """Stop both ends by process group and remove the partial copy (best effort)."""
        jobs = []
        for where, transport in (("source", self.source_t), ("dest", self.dest_t)):
            values = {"GPUDASH_PGID": self.pgids.get(where, "")}
            if where == "source":
                values["GPUDASH_ERR"] = self.err_file
            else:
                values |= {"GPUDASH_TO": self.p.to, "GPUDASH_RUN": self.run_id}
            jobs.append(transport.output(cs.script(cs.STOP, values), timeout=CONTROL_TIMEOUT_S))
        with contextlib.suppress(Exception):
            async with deadline(STOP_TIMEOUT_S):
                await asyncio.gather(*jobs, return_exceptions=True)

    async def _copy(self) -> None:
        p = self.p
        marker = "gpudash-copy-" + _secrets.token_hex(8)
        dest_values = {
            "GPUDASH_TO": p.to,
            "GPUDASH_RUN": self.run_id,
            "GPUDASH_REPLACE": "1" if p.replace else "0",
            "GPUDASH_MARK": marker,
        }
        src_values = {"GPUDASH_PATH": p.path, "GPUDASH_MARK": marker}
        limit = self.timeout + 30
        dest = await self.dest_t.start_input(
            cs.script(cs.DEST, dest_values, stdin=True), timeout=limit
        )
        source: RemoteProcess | None = None
        try:
            dest_out = _Marked(dest, marker)
            words, _ = await dest_out.header()
            if words[:1] != ["pgid"]:
                raise CopyFailed(_error(words, dest_out.noise, f"{self.host} (destination)"), 3)
            self.pgids["dest"] = _digits(words, 1)
            source = await self.source_t.start(cs.script(cs.SOURCE, src_values), timeout=limit)
            src_out = _Marked(source, marker)
            words, first = await src_out.header()
            if words[:1] != ["pgid"]:
                raise CopyFailed(_error(words, src_out.noise, f"{p.source} (source)"), 3)
            self.pgids["source"] = _digits(words, 1)
            files, total = int(_digits(words, 3) or 0), int(_digits(words, 4) or 0)
            if len(words) > 6 and re.match(r"^/[\w./-]+$", words[6]):
                self.err_file = words[6]
            self.say(
                f"copying {_count(files, 'file')} ({size_text(total)} as tar) from "
                f"{p.source}:{p.path} to {self.host}:{p.to}\n"
            )
            drained = asyncio.ensure_future(_drain(dest_out.rest()))
            stopped = False
            try:
                try:
                    await self._pump(first, src_out.rest(), dest, total)
                except TransportError:  # the receiving end stopped: its rc says why
                    stopped = True
                    await source.close()
                src_rc = 0 if stopped else await source.wait()
                await dest.write_eof()
                said = await drained
            finally:
                drained.cancel()
            dest_rc = await dest.wait()
        finally:
            await dest.close()
            if source is not None:
                await source.close()
        if src_rc is None or dest_rc is None:
            raise TransportError("connection lost during the copy")
        tar_said, _ = await self.source_t.output(
            cs.script(cs.SOURCE_DONE, {"GPUDASH_ERR": self.err_file}), timeout=CONTROL_TIMEOUT_S
        )
        for line in tar_said.decode(errors="replace").splitlines():
            self.say(f"{p.source}: {line}\n")
        for line in said.decode(errors="replace").splitlines():
            if not line.startswith(marker):
                self.say(f"{self.host}: {line}\n")
        if dest_rc != 0:
            raise CopyFailed(f"tar on {self.host} (destination) exited {dest_rc}")
        if src_rc != 0:
            raise CopyFailed(f"tar on {p.source} (source) exited {src_rc}")
        if stopped:
            raise CopyFailed(f"the destination {self.host} stopped reading before the end")
        await self._verify()
        values = {
            "GPUDASH_TO": p.to,
            "GPUDASH_RUN": self.run_id,
            "GPUDASH_REPLACE": "1" if p.replace else "0",
        }
        out, rc = await self.dest_t.output(cs.script(cs.FINISH, values), timeout=CONTROL_TIMEOUT_S)
        if rc != 0:
            said_text = out.decode(errors="replace").strip() or f"exit status {rc}"
            raise CopyFailed(f"could not move the copy into place: {said_text}")
        self.say(f"done: {p.to} on {self.host}\n")

    async def _pump(
        self, first: bytes, chunks: AsyncIterator[bytes], dest: RemoteProcess, total: int
    ) -> None:
        started = time.monotonic()
        shown = started
        done = 0
        if first:
            await dest.write(first)
            done += len(first)
        async for chunk in chunks:
            await dest.write(chunk)
            done += len(chunk)
            now = time.monotonic()
            if now - shown >= PROGRESS_EVERY_S:
                shown = now
                self.emit(_progress(done, total, now - started).encode())
                self._redrawn = True
        self.emit(_progress(done, total, time.monotonic() - started).encode() + b"\n")
        self._redrawn = False

    async def _verify(self) -> None:
        p = self.p
        self.say("verifying: sha256 of every file on both hosts\n")
        partial = f"{p.to}.gpudash-copy-{self.run_id}"
        source, dest = await asyncio.gather(
            _manifest(self.source_t, p.path, f"{p.source} (source)", self.timeout),
            _manifest(self.dest_t, partial, f"{self.host} (destination)", self.timeout),
        )
        problems = cs.compare(source, dest)
        if problems:
            for line in problems:
                self.say(f"differs: {line}\n")
            raise CopyFailed(
                f"verification failed: the copy on {self.host} differs from {p.source}"
                f" ({source.files} files there, {dest.files} here)"
            )
        links = sum(1 for e in source.entries.values() if e.kind == "l")
        self.say(
            f"verified: {_count(source.files, 'file')} ({size_text(source.size)}),"
            f" {_count(links, 'link')}, every sha256 matches\n"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _digits(words: list[str], index: int) -> str:
    return words[index] if len(words) > index and is_uint(words[index]) else ""


def _progress(done: int, total: int, elapsed: float) -> str:
    rate = done / elapsed if elapsed > 0 else 0.0
    percent = f" ({min(100, done * 100 // total)}%)" if total else ""
    return f"\rcopied {size_text(done)} / {size_text(total)}{percent} at {size_text(rate)}/s"


async def _drain(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])
