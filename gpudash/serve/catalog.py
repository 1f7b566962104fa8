"""The failure signatures an engine's log is judged by, each with the public report it comes from.

A signature is a few literal fragments that must all appear in one log line. The lines were
collected from the engines' GitHub issues (SGLang, vLLM, FlashInfer, PyTorch threads where the
engine printed them); each row names the thread it was read in. `CODES` says, per code, why
the launch failed and what to do about it. Travels to the host: stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    """Fragments that must all appear in one line (case-sensitive), and where they were seen."""

    code: str
    needles: tuple[str, ...]
    source: str
    why: str = ""  # overrides the code's why where this wording says more


# Why/fix per code. Words for a person at a terminal, one sentence each.
CODES: dict[str, tuple[str, str]] = {
    "serve.port_in_use": (
        "a port the engine binds is already taken (another server, or an orphan of an earlier run)",
        "stop the holder (`ss -ltnp` names it) or choose another port",
    ),
    "serve.gpu_busy": (
        "another process holds GPU memory or the GPUs, so the engine cannot take its share",
        "stop the other processes on the GPUs (`nvidia-smi` lists them; orphans of an"
        " earlier server are the usual cause)",
    ),
    "serve.oom": (
        "CUDA ran out of memory while loading the weights or capturing CUDA graphs",
        "use more GPUs (tp), a smaller or quantized model, a lower memory fraction, or"
        " fewer CUDA-graph batch sizes",
    ),
    "serve.kv_cache": (
        "after the weights there is no room for the KV cache the context length needs",
        "lower the maximum context length, raise the memory fraction, or use more GPUs",
    ),
    "serve.nccl": (
        "NCCL failed while the GPUs set up their communicators or the custom all-reduce",
        "check NVLink/P2P (`nvidia-smi topo -m`), /dev/shm, and rerun with NCCL_DEBUG=INFO;"
        " try --disable-custom-all-reduce",
    ),
    "serve.model_access": (
        "the model could not be read: a gated or private hub repo without a token, or a"
        " folder without its config or weights",
        "set HF_TOKEN with access to the repo, or point at a folder holding config.json and"
        " the weights",
    ),
    "serve.driver": (
        "the NVIDIA driver is older than the CUDA the venv's torch was built for",
        "upgrade the driver, or install the torch/engine build for the driver's CUDA",
    ),
    "serve.arch": (
        "the installed kernels were not built for this GPU's architecture",
        "install an engine/torch build that includes this GPU's SM (e.g. cu128+ wheels"
        " for Blackwell)",
    ),
    "serve.jit": (
        "a JIT kernel build (FlashInfer/Triton) failed or never finished",
        "install a CUDA toolkit whose nvcc knows this GPU, a C compiler, and clear a stale"
        " ~/.cache/flashinfer; or use a wheel with prebuilt kernels",
    ),
    "serve.fabric": (
        "CUDA is not initialized (error 802): on NVSwitch boards the fabric manager is not running",
        "start nvidia-fabricmanager (same version as the driver) and retry",
    ),
    "serve.disk": (
        "a cache folder or /dev/shm ran out of space",
        "free space in ~/.cache (flashinfer, triton, vllm, huggingface) or grow /dev/shm",
    ),
}

VLLM = "https://github.com/vllm-project/vllm/issues/"
VLLM_PR = "https://github.com/vllm-project/vllm/pull/"
SGLANG = "https://github.com/sgl-project/sglang/issues/"
SGLANG_PR = "https://github.com/sgl-project/sglang/pull/"


def _S(code: str, source: str, *needles: str, why: str = "") -> Signature:
    return Signature(code, needles, source, why)


# Each literal below is quoted from the thread named beside it; within a code, the more
# telling wording first (a graph-capture OOM before any OOM).
SIGNATURES: tuple[Signature, ...] = (
    _S("serve.port_in_use", VLLM + "9763", "[Errno 98]", "ddress already in use"),
    _S(
        "serve.port_in_use",
        VLLM + "7514",
        "error while attempting to bind on address",
        "address already in use",
    ),
    _S("serve.port_in_use", SGLANG + "9396", "ZMQError", "Address already in use"),
    _S(
        "serve.port_in_use",
        VLLM + "11617",
        "failed to listen on any local network address",
        "EADDRINUSE",
    ),
    _S(
        "serve.gpu_busy",
        SGLANG + "1533",
        "The memory capacity is unbalanced. Some GPUs may be occupied by other processes",
    ),
    _S(
        "serve.gpu_busy",
        VLLM + "20305",
        "Free memory on device",
        "is less than desired GPU memory utilization",
    ),
    _S(
        "serve.gpu_busy",
        "https://github.com/hiyouga/LlamaFactory/issues/10240",
        "CUDA-capable device(s) is/are busy or unavailable",
    ),
    _S(
        "serve.gpu_busy",
        "https://github.com/chatchat-space/Langchain-Chatchat/issues/3813",
        "all CUDA-capable devices are busy or unavailable",
    ),
    _S(
        "serve.oom",
        SGLANG + "5285",
        "Capture cuda graph failed",
        "out of memory",
        why="CUDA ran out of memory while capturing CUDA graphs",
    ),
    _S("serve.oom", VLLM + "16343", "CUDA out of memory"),
    _S("serve.oom", SGLANG + "4547", "CUDA error: out of memory"),
    _S("serve.kv_cache", VLLM + "2248", "No available memory for the cache blocks"),
    _S(
        "serve.kv_cache",
        VLLM + "2418",
        "is larger than the maximum number of tokens that can be stored in KV cache",
        why="the model's max length needs more KV cache than fits after the weights",
    ),
    _S(
        "serve.kv_cache",
        VLLM + "16118",
        "KV cache is needed, which is larger than the available KV cache memory",
        why="one request at the model's max length needs more KV cache than fits",
    ),
    _S(
        "serve.kv_cache",
        SGLANG + "4330",
        "Not enough memory. Please try to increase --mem-fraction-static",
    ),
    _S("serve.nccl", SGLANG + "4289", "NCCL error"),
    _S("serve.nccl", "https://github.com/pytorch/pytorch/issues/149984", "ncclSystemError"),
    _S("serve.nccl", VLLM + "6732", "ncclUnhandledCudaError"),
    _S(
        "serve.model_access",
        "https://github.com/huggingface/huggingface_hub/pull/1225",
        "GatedRepoError",
    ),
    _S("serve.model_access", SGLANG_PR + "14644", "You are trying to access a gated repo"),
    _S("serve.model_access", SGLANG + "387", "Cannot access gated repo for url"),
    _S(
        "serve.model_access",
        "https://github.com/Sudharsanselvaraj/Token-Print/pull/305",
        "RepositoryNotFoundError",
    ),
    _S("serve.model_access", VLLM + "13510", "Invalid repository ID or local directory specified"),
    _S(
        "serve.model_access",
        "https://github.com/zstar1003/ragflow-plus/issues/64",
        "Could not detect config format for no config file found",
    ),
    _S("serve.model_access", VLLM_PR + "13724", "does not appear to have a file named"),
    _S("serve.driver", VLLM + "11623", "The NVIDIA driver on your system is too old"),
    _S(
        "serve.driver",
        VLLM + "1772",
        "CUDA driver version is insufficient for CUDA runtime version",
    ),
    _S("serve.arch", VLLM + "18995", "no kernel image is available for execution on the device"),
    _S(
        "serve.arch",
        "https://github.com/RVC-Boss/GPT-SoVITS/issues/2625",
        "cudaErrorNoKernelImageForDevice",
    ),
    _S(
        "serve.jit",
        "https://github.com/flashinfer-ai/flashinfer/issues/1658",
        "nvcc fatal",
        "Unsupported gpu architecture",
        why="nvcc on the host does not know this GPU's architecture, so the JIT build failed",
    ),
    _S(
        "serve.jit",
        VLLM + "2997",
        "Failed to find C compiler",
        why="Triton needs a C compiler to build its launcher and none was found",
    ),
    _S("serve.jit", SGLANG + "7855", "errors detected in the compilation of", "flashinfer"),
    _S("serve.jit", SGLANG + "7855", "ninja: build stopped: subcommand failed"),
    _S("serve.jit", SGLANG + "7855", "CalledProcessError", "ninja"),
    _S("serve.fabric", VLLM + "16127", "Error 802: system not yet initialized"),
    _S(
        "serve.fabric", "https://github.com/pytorch/pytorch/issues/35710", "cudaErrorSystemNotReady"
    ),
    _S("serve.fabric", "https://github.com/jax-ml/jax/issues/24866", "CUDA_ERROR_SYSTEM_NOT_READY"),
    _S("serve.fabric", VLLM + "26922", "CUDA error: system not yet initialized"),
    _S("serve.disk", "https://github.com/xai-org/grok-1/issues/138", "No space left on device"),
)

# A FlashInfer JIT load that never finishes: the lock of a killed run (flashinfer#972). Not an
# error line; the supervisor asks about it when a launch stalls (classify.stall_cause).
JIT_LOCK_LINE = "Loading JIT ops"
JIT_LOCK_SOURCE = "https://github.com/flashinfer-ai/flashinfer/issues/972"

# Cheap prefilter: every signature holds one of these in one of its needles (a test checks).
# `PRIMARY` alone is searched over the whole of a big log; the rest only near lines that hold it.
PRIMARY = "rror"
SECONDARY = (
    "out of memory",
    "fatal",
    "too old",
    "ddress already in use",
    "EADDRINUSE",
    "is/are busy",
    "devices are busy",
    "memory capacity is unbalanced",
    "Free memory on device",
    "cache blocks",
    "KV cache",
    "Not enough memory",
    "NCCL",
    "gated repo",
    "insufficient for CUDA",
    "no kernel image",
    "ninja",
    "802",
    "NOT_READY",
    "No space left",
    "does not appear to have",
    "Invalid repository ID",
    "no config file",
    "C compiler",
    "Exception:",
)
KEYS = (PRIMARY, *SECONDARY)
