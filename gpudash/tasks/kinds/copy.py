"""copy: a directory from another host, every file's sha256 verified. Not a shell body: the
copy is two jobs, host to host (`gpudash.tasks.copy.direct`, fed as one chain to many
destinations: `copy.fanout`), or gpudash streams it (params.via = "gpudash":
`copy.transfer`); its `run` is the copy engine (`gpudash.tasks.copy.kind`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from gpudash.tasks.events import TaskEvent
from gpudash.tasks.kinds.base import Draft, HostGroup, Kind, Param, RunContext

if TYPE_CHECKING:
    from gpudash.tasks.spec import TaskSpec


def _preview(spec: TaskSpec, draft: Draft) -> str:
    """What each end runs."""
    from gpudash.tasks.copy.scripts import preview

    script = preview(spec.params)
    if spec.params.get("caches"):
        script += (
            "# then, caches = true: each JIT cache the source has (FlashInfer, Triton, torch"
            " inductor, vLLM;\n# gpudash/tasks/copy/caches.py) as its own verified copy\n"
        )
    return script


async def _run(ctx: RunContext) -> AsyncIterator[TaskEvent]:
    from gpudash.tasks.copy.fanout import CopyGroup
    from gpudash.tasks.copy.kind import run_copy

    group = ctx.group if isinstance(ctx.group, CopyGroup) else None
    async for event in run_copy(
        ctx.host, ctx.transport, ctx.prepared, ctx.peer, cancel=ctx.cancel, group=group
    ):
        yield event


def _together(spec: TaskSpec, hosts: Sequence[str]) -> HostGroup | None:
    from gpudash.tasks.copy.fanout import copy_group

    return copy_group(spec, hosts)


KIND = Kind(
    "copy",
    {
        "from": Param("host", "", doc="the source host (a configured host name)"),
        "path": Param("dir", "~/venvs/serve", doc="the directory to copy, on the source"),
        "to": Param("dir", None, doc="where on the destination; unset: the same path"),
        "replace": Param("bool", False, doc="replace an existing destination directory"),
        "via": Param("str", "direct", doc='"direct" host to host, or "gpudash" through it'),
        "streams": Param("int", 4, doc="parallel streams of a direct copy"),
        "chunk_mb": Param("int", 256, doc="files above this go as byte ranges (MiB)"),
        "source_address": Param("str", "", doc="the source's address as the dest sees it"),
        "dest_address": Param("str", "", doc="what the source dials for the dest: HOST[:PORT]"),
        "fanout": Param(
            "bool",
            True,
            doc="many destinations in one run: fed as one chain (false: each alone)",
        ),
        "caches": Param(
            "bool",
            False,
            doc="also copy the JIT caches the source has (gpudash/tasks/copy/caches.py)",
        ),
    },
    "# copy: two jobs, host to host (gpudash/tasks/copy/direct.py), or via gpudash\n",
    None,
    affects=("env", "models"),
    default_timeout=6 * 3600,
    preview=_preview,
    run=_run,
    together=_together,
)
