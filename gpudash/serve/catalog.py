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

# Each literal below is quoted from the thread named beside it.
SIGNATURES: tuple[Signature, ...] = (
    # --- port in use
    Signature(
        "serve.port_in_use",
        ("[Errno 98]", "ddress already in use"),
        "https://github.com/vllm-project/vllm/issues/9763",
    ),
    Signature(
        "serve.port_in_use",
        ("error while attempting to bind on address", "address already in use"),
        "https://github.com/vllm-project/vllm/issues/7514",
    ),
    Signature(
        "serve.port_in_use",
        ("ZMQError", "Address already in use"),
        "https://github.com/sgl-project/sglang/issues/9396",
    ),
    Signature(
        "serve.port_in_use",
        ("failed to listen on any local network address", "EADDRINUSE"),
        "https://github.com/vllm-project/vllm/issues/11617",
    ),
    # --- GPUs held by others
    Signature(
        "serve.gpu_busy",
        ("The memory capacity is unbalanced. Some GPUs may be occupied by other processes",),
        "https://github.com/sgl-project/sglang/issues/1533",
    ),
    Signature(
        "serve.gpu_busy",
        ("Free memory on device", "is less than desired GPU memory utilization"),
        "https://github.com/vllm-project/vllm/issues/20305",
    ),
    Signature(
        "serve.gpu_busy",
        ("CUDA-capable device(s) is/are busy or unavailable",),
        "https://github.com/hiyouga/LlamaFactory/issues/10240",
    ),
    Signature(
        "serve.gpu_busy",
        ("all CUDA-capable devices are busy or unavailable",),
        "https://github.com/chatchat-space/Langchain-Chatchat/issues/3813",
    ),
    # --- out of memory (graph capture first: its wording says more)
    Signature(
        "serve.oom",
        ("Capture cuda graph failed", "out of memory"),
        "https://github.com/sgl-project/sglang/issues/5285",
        why="CUDA ran out of memory while capturing CUDA graphs",
    ),
    Signature(
        "serve.oom",
        ("CUDA out of memory",),
        "https://github.com/vllm-project/vllm/issues/16343",
    ),
    Signature(
        "serve.oom",
        ("CUDA error: out of memory",),
        "https://github.com/sgl-project/sglang/issues/4547",
    ),
    # --- no room for the KV cache
    Signature(
        "serve.kv_cache",
        ("No available memory for the cache blocks",),
        "https://github.com/vllm-project/vllm/issues/2248",
    ),
    Signature(
        "serve.kv_cache",
        ("is larger than the maximum number of tokens that can be stored in KV cache",),
        "https://github.com/vllm-project/vllm/issues/2418",
        why="the model's max length needs more KV cache than fits after the weights",
    ),
    Signature(
        "serve.kv_cache",
        ("KV cache is needed, which is larger than the available KV cache memory",),
        "https://github.com/vllm-project/vllm/issues/16118",
        why="one request at the model's max length needs more KV cache than fits",
    ),
    Signature(
        "serve.kv_cache",
        ("Not enough memory. Please try to increase --mem-fraction-static",),
        "https://github.com/sgl-project/sglang/issues/4330",
    ),
    # --- NCCL
    Signature(
        "serve.nccl",
        ("NCCL error",),
        "https://github.com/sgl-project/sglang/issues/4289",
    ),
    Signature(
        "serve.nccl",
        ("ncclSystemError",),
        "https://github.com/pytorch/pytorch/issues/149984",
    ),
    Signature(
        "serve.nccl",
        ("ncclUnhandledCudaError",),
        "https://github.com/vllm-project/vllm/issues/6732",
    ),
    # --- model access
    Signature(
        "serve.model_access",
        ("GatedRepoError",),
        "https://github.com/huggingface/huggingface_hub/pull/1225",
    ),
    Signature(
        "serve.model_access",
        ("You are trying to access a gated repo",),
        "https://github.com/sgl-project/sglang/pull/14644",
    ),
    Signature(
        "serve.model_access",
        ("Cannot access gated repo for url",),
        "https://github.com/sgl-project/sglang/issues/387",
    ),
    Signature(
        "serve.model_access",
        ("RepositoryNotFoundError",),
        "https://github.com/Sudharsanselvaraj/Token-Print/pull/305",
    ),
    Signature(
        "serve.model_access",
        ("Invalid repository ID or local directory specified",),
        "https://github.com/vllm-project/vllm/issues/13510",
    ),
    Signature(
        "serve.model_access",
        ("Could not detect config format for no config file found",),
        "https://github.com/zstar1003/ragflow-plus/issues/64",
    ),
    Signature(
        "serve.model_access",
        ("does not appear to have a file named",),
        "https://github.com/vllm-project/vllm/pull/13724",
    ),
    # --- driver
    Signature(
        "serve.driver",
        ("The NVIDIA driver on your system is too old",),
        "https://github.com/vllm-project/vllm/issues/11623",
    ),
    Signature(
        "serve.driver",
        ("CUDA driver version is insufficient for CUDA runtime version",),
        "https://github.com/vllm-project/vllm/issues/1772",
    ),
    # --- architecture
    Signature(
        "serve.arch",
        ("no kernel image is available for execution on the device",),
        "https://github.com/vllm-project/vllm/issues/18995",
    ),
    Signature(
        "serve.arch",
        ("cudaErrorNoKernelImageForDevice",),
        "https://github.com/RVC-Boss/GPT-SoVITS/issues/2625",
    ),
    # --- JIT builds
    Signature(
        "serve.jit",
        ("nvcc fatal", "Unsupported gpu architecture"),
        "https://github.com/flashinfer-ai/flashinfer/issues/1658",
        why="nvcc on the host does not know this GPU's architecture, so the JIT build failed",
    ),
    Signature(
        "serve.jit",
        ("Failed to find C compiler",),
        "https://github.com/vllm-project/vllm/issues/2997",
        why="Triton needs a C compiler to build its launcher and none was found",
    ),
    Signature(
        "serve.jit",
        ("errors detected in the compilation of", "flashinfer"),
        "https://github.com/sgl-project/sglang/issues/7855",
    ),
    Signature(
        "serve.jit",
        ("ninja: build stopped: subcommand failed",),
        "https://github.com/sgl-project/sglang/issues/7855",
    ),
    Signature(
        "serve.jit",
        ("CalledProcessError", "ninja"),
        "https://github.com/sgl-project/sglang/issues/7855",
    ),
    # --- fabric manager (CUDA error 802)
    Signature(
        "serve.fabric",
        ("Error 802: system not yet initialized",),
        "https://github.com/vllm-project/vllm/issues/16127",
    ),
    Signature(
        "serve.fabric",
        ("cudaErrorSystemNotReady",),
        "https://github.com/pytorch/pytorch/issues/35710",
    ),
    Signature(
        "serve.fabric",
        ("CUDA_ERROR_SYSTEM_NOT_READY",),
        "https://github.com/jax-ml/jax/issues/24866",
    ),
    Signature(
        "serve.fabric",
        ("CUDA error: system not yet initialized",),
        "https://github.com/vllm-project/vllm/issues/26922",
    ),
    # --- disk
    Signature(
        "serve.disk",
        ("No space left on device",),
        "https://github.com/xai-org/grok-1/issues/138",
    ),
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
