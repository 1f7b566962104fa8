"""What a task kind is: its parameters, its shell body and check, and the hooks through which
it differs from the others. The pipeline (`gpudash.tasks.prepare`, `gpudash.tasks.fleet_run`)
calls the hooks and never asks a kind's name, as the probe never asks a section's.

Hooks, each optional:

    prepare(draft, facts)  turns the checked params into what the body reads (picks the torch
                           index, reads patch files, ...); raises PrepareError to refuse
    preview(spec, draft)   what a confirmation shows when the job is not one shell script
    sites(params)          the internet sites the run downloads from ("" list: none)
    wants_facts(params)    whether the probe must run first (a parameter says "auto")
    together(spec, hosts)  the run's hosts of this task as one group, where the kind runs
                           them together (a copy fed to many destinations as one chain)
    run(ctx)               the run as task events, when it is not one detached job (a copy
                           is two jobs on two hosts); None: `gpudash.tasks.runner.run_task`
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gpudash.tasks.events import TaskEvent
    from gpudash.tasks.facts import Facts
    from gpudash.tasks.prepare import Prepared
    from gpudash.tasks.spec import TaskSpec
    from gpudash.transport.base import Transport


@dataclass(frozen=True)
class Param:
    """One parameter of a kind. `type` names a check in `gpudash.tasks.values.PARAM_TYPES`."""

    type: str
    default: object = None
    required: bool = False
    doc: str = ""


@dataclass
class Draft:
    """A task on its way to a script: the kind's `prepare` hook edits it in place. `params`
    become the body's `GPUDASH_*` variables; `files` travel into the job's `files/`."""

    spec: TaskSpec
    params: dict[str, object]
    body: str
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunContext:
    """Everything a kind's `run` hook may use for one host's run."""

    host: str
    transport: Transport
    prepared: Prepared
    peer: Callable[[str], Transport | None] | None = None
    """Another configured host's transport, by name (a copy's source)."""
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    root: str | None = None
    keep_attached: bool = False
    group: object = None
    """The run's other hosts of this task, where the kind runs them together (a copy's
    fan-out: `gpudash.tasks.copy.fanout.CopyGroup`)."""


class HostGroup(Protocol):
    """The hosts of one run that a kind runs together (a copy's fan-out chain)."""

    def withdraw(self, host: str) -> None:
        """`host` will not join (skipped, blocked, already done, or it ended)."""


PrepareHook = Callable[[Draft, "Facts"], None]
PreviewHook = Callable[["TaskSpec", Draft], str]
RunHook = Callable[[RunContext], AsyncIterator["TaskEvent"]]


@dataclass(frozen=True)
class Kind:
    name: str
    params: Mapping[str, Param]
    body: str
    check: str | None = None
    affects: tuple[str, ...] = ()
    """Probe sections a finished run changes, for the app to re-probe."""
    needs_facts: bool = False
    """True when a parameter can say "auto" and is chosen from the probe."""
    default_timeout: float = 1800.0
    needs_gpu: bool = False
    """True when the kind cannot work without an NVIDIA GPU and driver: a host whose probe
    saw none is refused up front (`gpudash.tasks.refusals`), before its needs run."""
    builtin_only: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)
    downloads: tuple[str, ...] = ()
    """The internet sites a run fetches from unless a mirror or local wheels are given."""
    offline_way: str = "set https_proxy"
    """What the user can do when the probe says those sites are out of reach."""
    facts_sections: tuple[str, ...] = ("gpus",)
    """The probe sections whose results `prepare` reads (`Facts.result`)."""
    prepare: PrepareHook | None = None
    preview: PreviewHook | None = None
    sites: Callable[[Mapping[str, object]], tuple[str, ...]] | None = None
    wants_facts: Callable[[Mapping[str, object]], bool] | None = None
    run: RunHook | None = None
    together: Callable[[TaskSpec, Sequence[str]], HostGroup | None] | None = None
    """The run's hosts of this task as one group (`RunContext.group`), or None: each alone."""

    def download_sites(self, params: Mapping[str, object]) -> tuple[str, ...]:
        """Where this run downloads from: nothing when a mirror or local wheels are given."""
        if params.get("index_url") or params.get("find_links") or params.get("no_index"):
            return ()
        return self.sites(params) if self.sites is not None else self.downloads

    def facts_needed(self, params: Mapping[str, object]) -> bool:
        """Whether the probe must run before this task can be prepared."""
        if not self.needs_facts:
            return False
        return self.wants_facts(params) if self.wants_facts is not None else True


VENV = Param("path", "~/venvs/serve", doc="the venv's directory on the host")
"""The serving venv, the parameter most kinds share."""


def cuda_is_auto(params: Mapping[str, object]) -> bool:
    """A kind whose only "auto" is the CUDA tag needs the probe only when it says auto."""
    return params.get("cuda", "auto") == "auto"


def sh(name: str) -> str:
    """A kind's shell text, kept as a `.sh` file beside its module (linted and read as sh)."""
    return Path(__file__).with_name(name).read_text(encoding="utf-8")
