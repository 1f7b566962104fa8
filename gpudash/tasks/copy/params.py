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

if TYPE_CHECKING:
    from gpudash.tasks.spec import TaskSpec


@dataclass(frozen=True)
class CopyParams:
    source: str
    path: str
    to: str
    """Where on the destination: the same path as on the source unless `to` is set."""
    replace: bool

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> CopyParams:
        path = str(params.get("path") or "")
        return cls(
            str(params.get("from") or ""),
            path,
            str(params.get("to") or "") or path,
            bool(params.get("replace")),
        )


def check_hosts(tasks: Mapping[str, TaskSpec], hosts: Iterable[str], report: Report) -> None:
    """Report `tasks.NAME.params.from` when it names no host of the config, and `sudo`
    (which a copy would otherwise silently not use)."""
    names = list(hosts)
    for name, spec in tasks.items():
        if spec.kind != "copy":
            continue
        if spec.sudo:
            report(
                ("tasks", name, "sudo"),
                "a copy runs as the login user on both hosts (sudo is not supported)",
            )
        source = CopyParams.of(spec.params).source
        if source and source not in names:
            near = suggest(source, names, value=True)
            listed = ", ".join(names) or "none"
            report(
                ("tasks", name, "params", "from"),
                f"unknown host {show(source)}{near} (hosts: {listed})",
            )
