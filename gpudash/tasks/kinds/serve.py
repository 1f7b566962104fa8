"""serve: launch the inference engine on the host and declare it ready only when it really
generated (issue 29). The supervisor (`gpudash/serve/supervisor.py` and its siblings) travels
as the job's files and runs there with the serving venv's python; this module checks what the
probe knows first (`gpudash.serve.preflight`) and refuses, one line each, before anything
launches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gpudash.serve import command, preflight
from gpudash.tasks.facts import Facts, PrepareError
from gpudash.tasks.kinds.base import VENV, Draft, Kind, Param

HF_TOKEN_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")  # as gpudash.tasks.prepare.HF_TOKEN_VARS
SERVE_DIR = Path(__file__).resolve().parents[2] / "serve"
TRAVELLING = (
    "supervisor.py",
    "engine_run.py",
    "ladder.py",
    "watchdog.py",
    "ready.py",
    "command.py",
    "hostcheck.py",
    "statefile.py",
    "phases.py",  # helper servelog's: the phases and facts read from the engine's log
    "classify.py",  # helper servelog's: the first root cause of a failed launch
    "catalog.py",  # the signatures classify matches, each with its public source
)
"""The modules the supervisor imports on the host (stdlib only, Python 3.9+); one that is
not in this checkout is left out, and the supervisor then works without it."""

BODY = r"""
PY="$GPUDASH_VENV/bin/python"
if [ ! -x "$PY" ]; then
    echo "gpudash-serve: no python at $PY (run the venv and serving tasks first)"
    exit 1
fi
exec "$PY" -B "$GPUDASH_JOB/files/supervisor.py" --task "${GPUDASH_JOB##*/}"
"""


def _prepare(draft: Draft, facts: Facts) -> None:
    params = draft.params
    secrets = draft.spec.secrets
    token_here = any(
        os.environ.get(n) for n in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN") if n in secrets
    )
    plan = preflight.plan(facts.result, params, token_here=token_here, gpus_seen=facts.gpus)
    if plan.refusals:
        raise PrepareError("\n".join(f"{draft.spec.name}: {r.line}" for r in plan.refusals))
    params.update(tp=plan.tp, device=plan.device, name=plan.name)
    draft.notes.extend(plan.notes)
    shown = command.shown(
        command.argv(
            str(params["engine"]),
            str(params["venv"]),
            str(params["model"]),
            port="PORT" if params["port"] == "auto" else str(params["port"]),
            tp=plan.tp,
            name=plan.name,
            device=plan.device,
            args=[str(a) for a in _listed(params.get("args"))],
        )
    )
    draft.notes.append(
        f"engine: {shown}"
        + (" (PORT: the first free from 30000)" if params["port"] == "auto" else "")
    )
    draft.body = f"# engine: {shown}\n" + draft.body
    for name in TRAVELLING:
        path = SERVE_DIR / name
        if path.is_file():
            draft.files[name] = path.read_text(encoding="utf-8")


def _sites(params: Mapping[str, object]) -> tuple[str, ...]:
    """A hub id is downloaded by the engine at start: the Hub must be reachable."""
    return ("huggingface.co",) if preflight.is_hub_id(str(params.get("model", ""))) else ()


KIND = Kind(
    "serve",
    {
        "venv": VENV,
        "engine": Param("serve_engine", "sglang", doc="sglang, vllm or transformers"),
        "model": Param("model_ref", required=True, doc="a folder on the host, or a hub id"),
        "name": Param("str", "", doc="served model name; '' = the model's last path part"),
        "port": Param("port", "auto", doc='"auto" = the first free port from 30000'),
        "tp": Param("count_or_auto", "auto", doc='tensor parallel; "auto" = the GPUs seen'),
        "args": Param("args", [], doc="extra engine arguments, one per element"),
        "ready_timeout": Param("duration", "30m", doc="give up when not ready by then"),
        "stall": Param("duration", "5m", doc="no log line and no GPU memory change this long"),
        "device": Param("device", "auto", doc='transformers only: "cuda" with GPUs, else "cpu"'),
    },
    BODY,
    None,
    affects=("serve",),
    needs_facts=True,  # tp = "auto" and the preflight read the probe
    default_timeout=3 * 3600,  # above any ready_timeout: the supervisor gives up first
    facts_sections=("gpus", "env", "health", "models", "network"),
    prepare=_prepare,
    sites=_sites,
    offline_way="serve a folder on the host instead (gpudash run model HOST downloads one)",
)


def _listed(value: object) -> tuple[object, ...]:
    """A list parameter as checked (`args`): a list or tuple, else nothing."""
    return tuple(value) if isinstance(value, (list, tuple)) else ()
