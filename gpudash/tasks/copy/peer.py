"""A model from a peer: the `model` task with `params.from = "HOST"` copies the model that
host already has instead of downloading it, with the copy task's own verified copy
(`copy.kind.run_copy`: direct host to host, or via gpudash), never a second copier.

Which folder, decided on the peer by one small script (`PROBE`):

    1. DIR/REPO, the plain folder gpudash's model task writes (`hf download --local-dir`);
    2. else the Hugging Face cache's folder of the repo, HUB/models--ORG--NAME, where HUB is
       $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, HF_HOME defaulting to
       ${XDG_CACHE_HOME:-~/.cache}/huggingface (huggingface_hub's constants.py,
       https://github.com/huggingface/huggingface_hub/blob/03333b689b5a2dee604676791c0792ede6246a31/src/huggingface_hub/constants.py).
       Its layout (https://huggingface.co/docs/hub/local-cache and
       https://huggingface.co/docs/huggingface_hub/guides/manage-cache): blobs/ holds the files
       by hash, snapshots/COMMIT/ holds relative symlinks into blobs/, refs/BRANCH holds the
       commit a branch was at. The whole folder is copied, so the symlinks stay links.

It lands at the same place on the destination (a path under the peer's $HOME under the
destination's $HOME). `revision`: for the cache layout, the peer must hold that snapshot
(refs/REVISION, or snapshots/REVISION for a commit; unset: refs/main, else any snapshot);
for a plain folder it cannot be told (the folder does not record it) and the log says so.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpudash.tasks import events as ev
from gpudash.tasks import render
from gpudash.tasks.copy.kind import append_log, run_copy
from gpudash.tasks.prepare import Prepared
from gpudash.text import clean_line
from gpudash.transport.base import Transport, TransportError

# Prints one line: `plain TAB PATH`, `cache TAB PATH TAB SNAPSHOT`, `norev TAB PATH TAB REFS`
# or `none TAB PLAIN TAB CACHE`; paths under $HOME as ~/... A plain folder counts once it
# holds an entry besides hf's own .cache/ (a failed download leaves an empty folder).
_BODY = r"""
gd_tilde() { case "$1" in "$HOME"/*) printf '~/%s' "${1#"$HOME"/}" ;; *) printf '%s' "$1" ;; esac; }
P="$GPUDASH_DIR/$GPUDASH_REPO"
HF=${HF_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/huggingface}
HUB=${HF_HUB_CACHE:-${HUGGINGFACE_HUB_CACHE:-$HF/hub}}
case "$HUB" in "~/"*) HUB="$HOME/${HUB#"~/"}" ;; esac
C="$HUB/models--$(printf '%s' "$GPUDASH_REPO" | sed 's|/|--|g')"
if [ -d "$P" ] && [ -n "$(ls -A "$P" 2>/dev/null | grep -vx '.cache' | head -n 1)" ]; then
    printf 'plain\t%s\n' "$(gd_tilde "$P")"
elif [ -d "$C/snapshots" ]; then
    want=${GPUDASH_REVISION:-main}
    snap=
    if [ -f "$C/refs/$want" ]; then snap=$(head -n 1 "$C/refs/$want"); fi
    [ -n "$snap" ] && [ -d "$C/snapshots/$snap" ] || snap=
    if [ -z "$snap" ] && [ -d "$C/snapshots/$want" ]; then snap=$want; fi
    if [ -z "$snap" ] && [ -z "$GPUDASH_REVISION" ]; then
        snap=$(ls "$C/snapshots" 2>/dev/null | head -n 1)
    fi
    if [ -n "$snap" ]; then
        printf 'cache\t%s\t%s\n' "$(gd_tilde "$C")" "$snap"
    else
        printf 'norev\t%s\t%s\n' "$(gd_tilde "$C")" "$(ls "$C/refs" 2>/dev/null | tr '\n' ' ')"
    fi
else
    printf 'none\t%s\t%s\n' "$(gd_tilde "$P")" "$(gd_tilde "$C")"
fi
"""


def probe_script(dir_: str, repo: str, revision: str) -> str:
    values = {"GPUDASH_DIR": dir_, "GPUDASH_REPO": repo, "GPUDASH_REVISION": revision}
    return (
        "{\n"
        + render.exports(values)
        + render.home_expansion(["GPUDASH_DIR"])
        + _BODY
        + "} </dev/null\n"
    )


@dataclass(frozen=True)
class Located:
    """What the probe found on the peer. `layout`: "plain", "cache", or "" (nothing usable,
    `why` says what was looked at)."""

    layout: str
    path: str = ""
    snapshot: str = ""
    why: str = ""


def parse(text: str, peer: str, repo: str, revision: str) -> Located:
    """The probe's line as a `Located` (total: anything else is "nothing found")."""
    for line in text.splitlines():
        parts = line.split("\t")
        kind, rest = parts[0], parts[1:]
        if kind == "plain" and len(rest) == 1 and _path(rest[0]):
            return Located("plain", rest[0])
        if kind == "cache" and len(rest) == 2 and _path(rest[0]):
            return Located("cache", rest[0], clean_line(rest[1]))
        if kind == "norev" and len(rest) == 2:
            refs = clean_line(rest[1]).split() or ["none"]
            return Located(
                "",
                why=f"{peer} has {repo} in its Hugging Face cache ({clean_line(rest[0])}) but not"
                " revision"
                f" {revision or 'main'} (its refs: {', '.join(refs)})",
            )
        if kind == "none" and len(rest) == 2:
            return Located(
                "",
                why=f"{peer} has no copy of {repo}: looked at {clean_line(rest[0])} and"
                f" {clean_line(rest[1])}",
            )
    return Located("", why=f"{peer} did not answer where {repo} is (its probe printed nothing)")


def _path(text: str) -> bool:
    """A path gpudash may copy and show: absolute or under ~, no `..`, nothing that
    `clean_line` would change (remote text: no control or escape characters)."""
    return text.startswith(("/", "~/")) and ".." not in text.split("/") and clean_line(text) == text


def copy_params(model: Mapping[str, Any], found: Located) -> dict[str, Any]:
    """The copy task's parameters for the folder found: the same path on both hosts."""
    keys = ("from", "via", "streams", "chunk_mb", "source_address", "replace")
    out = {k: model[k] for k in keys if k in model}
    return {**out, "path": found.path, "to": found.path, "fanout": False, "caches": False}


async def run_model_from_peer(
    host: str,
    transport: Transport,
    prepared: Prepared,
    peer: Callable[[str], Transport | None] | None,
    *,
    cancel: asyncio.Event | None = None,
) -> AsyncIterator[ev.TaskEvent]:
    """The model task with `params.from`: find the model on the peer, then the copy task's
    run of that folder (its events, under the model task's name), with lines saying which
    folder was found and where it lands."""
    spec = prepared.spec
    name = spec.name
    params = spec.params
    source_name = str(params.get("from") or "")
    repo = str(params.get("repo") or "")
    revision = str(params.get("revision") or "")
    source = peer(source_name) if peer is not None and source_name != host else None
    if source_name == host or source is None:
        yield ev.TaskQueued(host, name)
        if source_name == host:
            yield ev.TaskSkipped(host, name, "this host is the model's source (params.from)")
        else:
            yield ev.TaskBlocked(host, name, f"source host {source_name!r} is not configured")
        return
    try:
        out, _ = await source.output(
            probe_script(str(params.get("dir") or "~/models"), repo, revision), timeout=60
        )
    except TransportError as exc:
        yield ev.TaskQueued(host, name)
        yield ev.TaskLost(host, name, f"{source_name}: {exc.reason}")
        return
    found = parse(out.decode(errors="replace"), source_name, repo, revision)
    if not found.layout:
        yield ev.TaskQueued(host, name)
        yield ev.TaskBlocked(host, name, found.why)
        return
    if found.layout == "plain":
        lines = [f"{source_name} has {repo} as a plain folder: {found.path}"]
        if revision:
            lines.append(f"revision {revision}: not checked (a plain folder does not record it)")
    else:
        lines = [
            f"{source_name} has {repo} in its Hugging Face cache: {found.path}"
            f" (snapshot {found.snapshot}; blobs and snapshot links copied as they are)"
        ]
    lines.append(f"it lands at {found.path} on {host}, verified (sha256, mode, link target)")
    if params.get("include"):
        lines.append("params.include does not apply to a copy from a peer: the whole folder goes")
    copy_spec = dataclasses.replace(spec, params=copy_params(params, found))
    copy = dataclasses.replace(prepared, spec=copy_spec, check=None)
    async for event in run_copy(host, transport, copy, peer, cancel=cancel, check=False):
        yield event
        if isinstance(event, ev.TaskStarted):
            append_log(event.log_path, lines)
            yield ev.TaskOutput(host, name, tuple(lines), "", 0)
