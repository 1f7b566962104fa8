"""Replay a directory written by `gpudash probe --save`, as if the host answered again.

Useful for triaging a machine from a colleague's capture, and for tests and snapshots that must
not depend on a live host. It runs nothing: `start` refuses, `probe` re-frames the saved parts.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

from gpudash.model import NOT_SAVED
from gpudash.probe.script import ProbePlan
from gpudash.probe.stream import RawSection
from gpudash.saved import SavedHost, load_host
from gpudash.text import clean_line
from gpudash.transport.base import RemoteProcess, Transport, TransportError


class ReplayTransport(Transport):
    kind = "replay"
    missing_section = NOT_SAVED
    """What a section the save does not hold says (a section added to gpudash since)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._saved: SavedHost | None = None

    async def connect(self) -> None:
        if self._saved is None:
            try:
                self._saved = load_host(self.directory)
            except FileNotFoundError:
                raise TransportError(f"replay: no saved probe at {self.directory}") from None
            except (OSError, ValueError) as exc:
                raise TransportError(f"replay: {clean_line(str(exc))}") from None
        if self._saved.state == "failed":
            raise TransportError(clean_line(self._saved.error or "failed when it was saved"))

    async def start(self, script: str, *, timeout: float | None = None) -> RemoteProcess:
        raise TransportError("replay: a saved probe cannot run commands")

    async def probe(self, plan: ProbePlan, *, timeout: float) -> AsyncGenerator[RawSection, None]:
        await self.connect()
        assert self._saved is not None
        for name in plan.names:
            if name not in self._saved.sections:
                continue
            rc, _error, parts = self._saved.sections[name]
            if rc is None and not parts:
                continue  # it never arrived (a capture older than the section): say so again
            frames = []
            for part in parts.values():
                if not part.name:
                    frames.append(part.text)
                    continue
                end = (
                    "" if part.rc is None else f"\n@@gpudash:{plan.nonce}:rc:{part.name}:{part.rc}"
                )
                frames.append(f"@@gpudash:{plan.nonce}:part:{part.name}\n{part.text}{end}")
            yield RawSection(name, rc, "\n".join(frames))

    async def close(self) -> None:
        self._saved = None
