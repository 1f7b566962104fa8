"""The copy task's parameters, and the one check only the whole config can make: that the
source host (`params.from`) is one of its hosts.

The shapes (`from` a one-line name, `path` a named directory, `to` a path) are checked with
every other task's parameters (`gpudash.tasks.values`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudash.config.values import Report, show, suggest
from gpudash.text import is_uint

if TYPE_CHECKING:
    from gpudash.tasks.spec import TaskSpec


VIAS = ("direct", "gpudash")


@dataclass(frozen=True)
class CopyParams:
    source: str
    path: str
    to: str
    """Where on the destination: the same path as on the source unless `to` is set."""
    replace: bool
    via: str = "direct"
    """"direct": source host -> destination host; "gpudash": through gpudash (today's path)."""
    streams: int = 4
    chunk_mb: int = 256
    """Files bigger than this are sent as byte ranges over several streams at once."""
    source_address: str = ""
    """The address the destination sees the source connect from; "" = the source's route."""
    fanout: bool = True
    """Many destinations in one run are fed as a chain (`copy.fanout`); False: each alone."""
    caches: bool = False
    """Also copy the JIT caches the source has (`copy.caches`), each its own verified copy."""
    dest_address: str = ""
    """What the source dials to reach the destination, `HOST` or `HOST:PORT` (a name only
    gpudash resolves, a host behind a jump); "" = the destination's configured address."""

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> CopyParams:
        path = str(params.get("path") or "")
        return cls(
            str(params.get("from") or ""),
            path,
            str(params.get("to") or "") or path,
            bool(params.get("replace")),
            str(params.get("via") or "direct"),
            _int(params.get("streams"), 4),
            _int(params.get("chunk_mb"), 256),
            str(params.get("source_address") or ""),
            params.get("fanout") is not False,
            params.get("caches") is True,
            str(params.get("dest_address") or ""),
        )


def dial(dest_address: str, address: str, port: int) -> tuple[str, int]:
    """The (host, port) the source dials: `dest_address` (`HOST`, `HOST:PORT`, `[V6]:PORT`)
    over the destination's configured address and port."""
    text = dest_address.strip()
    if not text:
        return address, port
    if text.startswith("[") and "]" in text:
        host, _, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and is_uint(rest[1:]) else port
    host, sep, tail = text.rpartition(":")
    if sep and host and ":" not in host and is_uint(tail):
        return host, int(tail)
    return text, port


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def check_hosts(tasks: Mapping[str, TaskSpec], hosts: Iterable[str], report: Report) -> None:
    """Report `tasks.NAME.params.from` when it names no host of the config, and `sudo`
    (which a copy would otherwise silently not use); for a copy, and for a model task that
    copies from a peer (`params.from` set) instead of downloading."""
    names = list(hosts)
    for name, spec in tasks.items():
        if spec.kind not in ("copy", "model"):
            continue
        if spec.kind == "model" and not spec.params.get("from"):
            continue
        if spec.sudo:
            report(
                ("tasks", name, "sudo"),
                "a copy runs as the login user on both hosts (sudo is not supported)",
            )
        params = CopyParams.of(spec.params)
        if params.via not in VIAS:
            report(
                ("tasks", name, "params", "via"),
                f"expected one of {', '.join(VIAS)}, got {show(params.via)}",
            )
        if not 1 <= params.streams <= 64:
            report(("tasks", name, "params", "streams"), "expected 1 to 64 streams")
        if not 1 <= params.chunk_mb <= 65536:
            report(("tasks", name, "params", "chunk_mb"), "expected 1 to 65536 (MiB)")
        if params.dest_address:
            host, port = dial(params.dest_address, "", 22)
            if not host or host.startswith("-") or any(c.isspace() for c in host) or port > 65535:
                report(
                    ("tasks", name, "params", "dest_address"),
                    f"expected HOST or HOST:PORT, got {show(params.dest_address)}",
                )
        source = params.source
        if source and source not in names:
            near = suggest(source, names, value=True)
            listed = ", ".join(names) or "none"
            report(
                ("tasks", name, "params", "from"),
                f"unknown host {show(source)}{near} (hosts: {listed})",
            )
