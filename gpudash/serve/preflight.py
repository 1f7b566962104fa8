"""Preflight of a serve launch from what the probe already knows, before anything starts.

Pure: a `HostResult` (sections gpus, env, health, models, network) and the task's params in,
the resolved choices (tp, device, served name) and one-line refusals out. Facts the probe
does not collect are checked on the host by the supervisor at launch, before the engine
starts (`gpudash.serve.hostcheck`): whether the port is free and who holds it, free space in
~/.cache/flashinfer, ~/.triton, ~/.cache/vllm and /dev/shm (the probe reads only /dev/shm's
size), a C compiler for Triton, the folder's config.json and weights when the models section
did not list it, and whether tp divides num_attention_heads (config.json is read only there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudash.checks.stack import driver_path
from gpudash.probe.sections.env import Env, Venv
from gpudash.probe.sections.gpus import Gpus
from gpudash.probe.sections.health import Health
from gpudash.probe.sections.models import Models
from gpudash.probe.sections.network import Network
from gpudash.serve.command import default_name
from gpudash.text import clean_line
from gpudash.versions import parse_version

if TYPE_CHECKING:
    from gpudash.model import HostResult

GPU_ENGINES = ("sglang", "vllm")


@dataclass(frozen=True)
class Refusal:
    code: str
    what: str
    why: str
    fix: str

    @property
    def line(self) -> str:
        return f"{self.code}: {self.what} ({self.why}); fix: {self.fix}"


@dataclass(frozen=True)
class Plan:
    tp: int
    device: str
    name: str
    refusals: tuple[Refusal, ...] = ()
    notes: tuple[str, ...] = ()


def is_hub_id(model: str) -> bool:
    """A hub id ("Qwen/Qwen3-0.6B") rather than a folder on the host."""
    return not model.startswith(("/", "~"))


def plan(
    result: HostResult | None,
    params: Mapping[str, object],
    *,
    token_here: bool = False,
    gpus_seen: int | None = None,
) -> Plan:
    """tp "auto" = the GPUs the probe sees (1 without); device "auto" = cuda with GPUs;
    refusals for what the probe shows would fail. `token_here`: an HF_TOKEN travels with the
    task from this machine (its `secrets`). `gpus_seen`: the GPU count when `result` holds
    no gpus section (facts given without the whole probe result)."""
    engine = str(params.get("engine", "sglang"))
    model = str(params.get("model", ""))
    gpus = result.data("gpus", Gpus) if result is not None else None
    listed = gpus is not None and gpus.source != "none"
    seen = (len(gpus.gpus) if listed else 0) if gpus is not None else gpus_seen or 0
    notes: list[str] = []
    out: list[Refusal] = []
    tp_param = params.get("tp", "auto")
    tp = (seen or 1) if tp_param == "auto" else int(str(tp_param))
    if tp_param == "auto":
        notes.append(f"tp = {tp} ({'the GPUs the probe sees' if seen else 'no GPU seen'})")
    device = str(params.get("device", "auto"))
    if device == "auto":
        device = "cuda" if seen else "cpu"
    name = str(params.get("name") or "") or default_name(engine, model)
    if engine == "transformers" and params.get("name"):
        notes.append("transformers serve has no served-name flag: name is the model as given")
        name = model
    on_gpu = engine in GPU_ENGINES or device == "cuda"
    if engine in GPU_ENGINES and gpus is not None and not seen:
        out.append(
            Refusal(
                "serve.arch",
                f"{engine} needs an NVIDIA GPU",
                f"the probe found none: {gpus.missing or 'no GPU listed'}",
                'serve on a GPU host, or set engine = "transformers"',
            )
        )
    if seen and tp > seen:
        out.append(
            Refusal("serve.tp", f"tp {tp}", f"the probe sees {seen} GPUs", f"set tp <= {seen}")
        )
    if on_gpu and gpus is not None:
        out.extend(_gpu_busy(gpus))
        out.extend(_driver(result, gpus, str(params.get("venv", ""))))
    if on_gpu and result is not None:
        out.extend(_fabric(result.data("health", Health)))
    out.extend(_model(result, model, token_here, notes))
    return Plan(tp, device, name, tuple(out), tuple(notes))


def _gpu_busy(gpus: Gpus) -> list[Refusal]:
    """Other processes holding GPU memory: orphans of an earlier server are the usual cause
    (https://github.com/sgl-project/sglang/issues/23627), and the engine's memory sizing
    then fails or over-commits."""
    held = [p for p in gpus.processes if (p.memory_mib or 0) > 0]
    if not held:
        return []
    shown = ", ".join(
        f"pid {p.pid} {clean_line(p.name or '?')[:40]} ({p.memory_mib} MiB on GPU {p.gpu})"
        for p in held[:4]
    )
    more = f" and {len(held) - 4} more" if len(held) > 4 else ""
    return [
        Refusal(
            "serve.gpu_busy",
            f"other processes hold GPU memory: {shown}{more}",
            "the engine sizes its KV cache from free memory and fails or runs out",
            "stop them (an earlier server: gpudash stop serve HOST), then launch again",
        )
    ]


def _venv_of(env: Env | None, venv: str) -> Venv | None:
    """The probe's entry for the task's venv (`~/x` matches the path the host expanded)."""
    for v in env.venvs if env is not None else ():
        if v.path == venv or (venv.startswith("~/") and v.path.endswith(venv[1:])):
            return v
    return None


def _driver(result: HostResult | None, gpus: Gpus, venv: str) -> list[Refusal]:
    found = _venv_of(result.data("env", Env) if result is not None else None, venv)
    if found is None or not found.torch_cuda:
        return []
    version = parse_version(found.torch_cuda)
    if not version:
        return []
    cuda = (version[0], version[1] if len(version) > 1 else 0)
    path, why = driver_path(cuda, gpus.driver_version, gpus.cuda_version)
    if path != "none":
        return []
    torch = found.packages.get("torch", "?")
    return [
        Refusal(
            "serve.driver",
            f"torch {torch} in {found.path} is built for CUDA {found.torch_cuda}",
            f"the driver cannot run it: {why}",
            "reinstall torch for this driver (gpudash run torch HOST), or upgrade the driver",
        )
    ]


def _fabric(health: Health | None) -> list[Refusal]:
    fm = health.fabric_manager if health is not None else None
    if fm is None or fm.active in (None, "active"):
        return []  # no NVSwitch on the bus, unknown, or running
    return [
        Refusal(
            "serve.fabric",
            f"nvidia-fabricmanager is {fm.active} on an NVSwitch board",
            "CUDA fails at init with error 802 (system not yet initialized) until it runs",
            "sudo systemctl start nvidia-fabricmanager (its version must equal the driver's)",
        )
    ]


def _model(result: HostResult | None, model: str, token: bool, notes: list[str]) -> list[Refusal]:
    if is_hub_id(model):
        network = result.data("network", Network) if result is not None else None
        if token or (network is not None and network.hf_token):
            return []
        if network is None:
            notes.append("whether the host has an HF token is unknown (no network probe)")
            return []
        return [
            Refusal(
                "serve.model_access",
                f"{model} is a hub id and no HF token is set",
                "gated models answer 401 and the launch fails after minutes",
                "export HF_TOKEN here (the task sends it as a secret), or serve a folder"
                " downloaded with the model task",
            )
        ]
    models = result.data("models", Models) if result is not None else None
    for folder in models.dirs if models is not None else ():
        for m in folder.models:
            if m.path == model or (model.startswith("~/") and m.path.endswith(model[1:])):
                if m.complete:
                    return []
                what = "no config.json" if not m.has_config else "no weights"
                if m.has_config and m.has_weights:
                    what = f"{m.missing_count or len(m.missing)} shards missing"
                return [
                    Refusal(
                        "serve.model_access",
                        f"{model} is incomplete: {what}",
                        "the engine fails while loading weights",
                        "finish the download (gpudash run model HOST resumes it)",
                    )
                ]
    notes.append(f"{model}: config.json and weights are checked on the host at launch")
    return []
