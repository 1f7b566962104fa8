"""torch: PyTorch from the index built for the driver's CUDA and the GPUs' compute capability.

Which index fits a host is decided from PyTorch's published build matrix
(`gpudash.checks.stack.choose_torch`); the serving kind picks its `--torch-backend` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from gpudash.checks.facts import FACTS_DATE
from gpudash.checks.stack import choose_torch
from gpudash.tasks.facts import Facts, PrepareError
from gpudash.tasks.kinds.base import VENV, Draft, Kind, Param, cuda_is_auto, sh
from gpudash.tasks.kinds.pip import PIP_BODY

TORCH_CUDA_TAGS = ("cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130", "cu132")
"""Only what a `cuda` parameter may name; which one fits is `choose_torch`'s."""


@dataclass(frozen=True)
class TorchPick:
    tag: str  # "cu126", "cpu"
    release: str | None  # "2.14" when chosen from the facts; None: left to the index
    why: str  # one line for --show


def pick(name: str, params: Mapping[str, object], facts: Facts) -> TorchPick:
    """The index (and torch release) for this host: from PyTorch's build matrix, the newest
    release with a variant that runs on every GPU under the driver; pins narrow it and are
    refused with the reason when the pinned build cannot run here."""
    value = str(params.get("cuda", "auto"))
    pin_torch = str(params.get("torch") or "") or None
    if value == "cpu":
        return TorchPick("cpu", None, "cuda = cpu (set)")
    if not facts.known:
        if value == "auto":
            raise PrepareError(f'{name}: cuda = "auto" needs the gpus probe of the host; set cuda')
        return TorchPick(value, None, f"cuda = {value} (set; no gpus probe to check it against)")
    if not facts.ccs:
        if value == "auto":
            return TorchPick("cpu", None, "cuda = cpu (the probe found no GPU)")
        return TorchPick(value, None, f"cuda = {value} (set; the probe found no GPU)")
    pin_cuda = None if value == "auto" else value
    choice = choose_torch(
        facts.driver_version,
        facts.ccs,
        pin_torch,
        pin_cuda,
        reported_cuda=facts.driver_cuda,
        broken=facts.broken,
    )
    if choice.build is not None:
        return TorchPick(choice.build.variant, choice.build.release, choice.why)
    if choice.verdict is None and pin_cuda and choice.why.startswith("no torch build in"):
        # A pinned build gpudash has no facts about: not refused (it may well run), said so.
        return TorchPick(
            pin_cuda, None, f"cuda = {pin_cuda} (set; not in gpudash's facts of {FACTS_DATE})"
        )
    raise PrepareError(f"{name}: {choice.why}")


def _pin_torch(packages: object, release: str) -> tuple[str, ...]:
    """`torch` without a version becomes `torch==2.14.*`: the release the choice was for."""
    out = []
    for entry in packages if isinstance(packages, (list, tuple)) else (packages,):
        text = str(entry)
        out.append(f"torch=={release}.*" if text.strip() == "torch" else text)
    return tuple(out)


def _prepare(draft: Draft, facts: Facts) -> None:
    params = draft.params
    chosen = pick(draft.spec.name, params, facts)
    draft.notes.append(chosen.why)
    params["cuda"] = chosen.tag
    params["torch"] = chosen.release or params.get("torch") or ""
    if chosen.release:
        params["packages"] = _pin_torch(params["packages"], chosen.release)
    index = str(params.pop("index")).rstrip("/")
    params["index_url"] = f"{index}/{params['cuda']}"


def _sites(params: Mapping[str, object]) -> tuple[str, ...]:
    """Its own index, a mirror included."""
    return (urlsplit(str(params.get("index") or "")).hostname or "download.pytorch.org",)


KIND = Kind(
    "torch",
    {
        "venv": VENV,
        "cuda": Param("cuda", "auto", doc="cuNNN, cpu, or auto (from the probe)"),
        "torch": Param(
            "version", "", doc='torch release, "2.9.*" or "2.9"; "" = the newest that runs'
        ),
        "packages": Param("packages", ["torch"]),
        "index": Param("url", "https://download.pytorch.org/whl"),
    },
    PIP_BODY,
    sh("torch_check.sh"),
    affects=("env",),
    needs_facts=True,
    default_timeout=3600,
    downloads=("download.pytorch.org",),
    prepare=_prepare,
    sites=_sites,
    wants_facts=cuda_is_auto,
)
