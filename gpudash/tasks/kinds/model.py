"""model: `hf download` of a repo after a free-space check, or (params.from) a verified copy of
the folder a peer already has (`gpudash.tasks.copy.peer`), which downloads nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gpudash.tasks.events import TaskEvent
from gpudash.tasks.facts import Facts
from gpudash.tasks.kinds.base import Draft, Kind, Param, RunContext, sh

if TYPE_CHECKING:
    from gpudash.tasks.spec import TaskSpec


def _from_peer(params: object) -> str:
    return str(getattr(params, "get", lambda *_: "")("from") or "")


def _preview(spec: TaskSpec, draft: Draft) -> str:
    source = _from_peer(spec.params)
    if not source:
        return ""
    return (
        f"# model {spec.params.get('repo')}: copied from {source} (params.from), not"
        f" downloaded\n# on {source}: the folder {draft.params.get('dir')}/REPO, else the Hugging"
        " Face cache's models--ORG--NAME\n"
        "# then the copy task's verified copy of that folder to the same place here\n"
    )


def _prepare(draft: Draft, facts: Facts) -> None:
    source = _from_peer(draft.spec.params)
    if source:
        draft.notes.append(f"copied from {source}, not downloaded")


async def _run(ctx: RunContext) -> AsyncIterator[TaskEvent]:
    if _from_peer(ctx.prepared.spec.params):
        from gpudash.tasks.copy.peer import run_model_from_peer

        stream = run_model_from_peer(
            ctx.host, ctx.transport, ctx.prepared, ctx.peer, cancel=ctx.cancel
        )
    else:
        from gpudash.tasks.runner import run_task

        stream = run_task(
            ctx.host,
            ctx.transport,
            ctx.prepared,
            cancel=ctx.cancel,
            root=ctx.root,
            keep_attached=ctx.keep_attached,
        )
    async for event in stream:
        yield event


KIND = Kind(
    "model",
    {
        "repo": Param("hf_repo", required=True),
        "revision": Param("str", ""),
        "dir": Param("path", "~/models"),
        "include": Param("patterns", []),
        # From a peer instead of the Hub: gpudash/tasks/copy/peer.py (a verified copy)
        "from": Param("host", "", doc="copy the model from this host instead (no download)"),
        "via": Param("str", "direct", doc='with from: "direct" host to host, or "gpudash"'),
        "streams": Param("int", 4, doc="with from: parallel streams of a direct copy"),
        "chunk_mb": Param("int", 256, doc="with from: files above this go as byte ranges"),
        "source_address": Param("str", "", doc="with from: the peer's address as seen"),
        "replace": Param("bool", False, doc="with from: replace a differing copy here"),
    },
    sh("model.sh"),
    None,
    affects=("models",),
    default_timeout=6 * 3600,
    prepare=_prepare,
    preview=_preview,
    run=_run,
)
