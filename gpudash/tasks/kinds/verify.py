"""verify: a program shipped to the host runs real kernels on its GPUs (`gpudash.tasks.verify`)."""

from __future__ import annotations

from gpudash.tasks.facts import Facts
from gpudash.tasks.kinds.base import VENV, Draft, Kind, Param
from gpudash.tasks.verify import BODY, PROGRAM


def _prepare(draft: Draft, facts: Facts) -> None:
    """The program travels with the job; CUDA's GPU count must equal the driver's."""
    draft.files["program.py"] = PROGRAM.read_text(encoding="utf-8")
    if facts.gpus is not None:
        draft.params["expect_gpus"] = str(facts.gpus)


KIND = Kind(
    "verify",
    {
        "venv": VENV,
        "force": Param("bool", False, doc="measure even when other processes use the GPUs"),
    },
    BODY,
    None,
    affects=("verify",),
    needs_facts=True,  # the GPU count the driver lists, which CUDA's must equal
    needs_gpu=True,  # it measures kernels, NCCL and the engines' imports on the GPUs
    default_timeout=900,
    prepare=_prepare,
)
