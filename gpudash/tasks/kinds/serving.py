"""serving: SGLang (with FlashInfer) or vLLM into the venv, torch from the index for its CUDA."""

from __future__ import annotations

from gpudash.tasks.facts import Facts
from gpudash.tasks.kinds.base import VENV, Draft, Kind, Param, cuda_is_auto, sh
from gpudash.tasks.kinds.pip import PIP_BODY
from gpudash.tasks.kinds.torch import pick


def _prepare(draft: Draft, facts: Facts) -> None:
    params = draft.params
    chosen = pick(draft.spec.name, params, facts)
    draft.notes.append(chosen.why)
    extra = "[all]" if params["engine"] == "sglang" else ""
    version = str(params.pop("version") or "")
    pin = version if not version or version[0] in "=<>!~" else f"=={version}"
    params["packages"] = (f"{params['engine']}{extra}{pin}",)
    params["torch_backend"] = chosen.tag
    params["cuda"] = chosen.tag


KIND = Kind(
    "serving",
    {
        "venv": VENV,
        "engine": Param("engine", "sglang"),
        "version": Param("version", ""),
        "cuda": Param("cuda", "auto"),
    },
    PIP_BODY,
    sh("serving_check.sh"),
    affects=("env",),
    needs_facts=True,
    default_timeout=3600,
    downloads=("pypi.org", "files.pythonhosted.org", "download.pytorch.org"),
    prepare=_prepare,
    wants_facts=cuda_is_auto,
)
