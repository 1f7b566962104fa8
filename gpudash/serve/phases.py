"""Where an engine's start is, read from its own log: the phase each line moves it into.

A phase is entered at the first line that shows the engine doing that step, so the time
between two entries is how long the step took and "stalled in PHASE" names the step that hung:

    launch        the process started
    weights       loading the weights
    kv_cache      weights loaded; profiling memory and allocating the KV cache (vLLM's
                  torch.compile runs here too)
    graph_capture capturing CUDA graphs
    warmup        graphs captured; warming up until the server listens
    listening     the HTTP server listens (generation is proven later, by the ready ladder)

Phases only move forward and may be skipped (eager mode has no graph capture). The lines are
the engines' own, each quoted from a public log (the URL beside it). Facts read on the way:
the attention backend the engine chose, and whether FlashInfer compiled kernels (JIT) at start.
Travels to the host: stdlib only.
"""

from __future__ import annotations

import re

PHASES = ("launch", "weights", "kv_cache", "graph_capture", "warmup", "listening")
PHASE_TITLES = {
    "launch": "launch",
    "weights": "loading weights",
    "kv_cache": "allocating KV cache",
    "graph_capture": "CUDA graph capture",
    "warmup": "warm-up",
    "listening": "listening",
}
ENGINES = ("sglang", "vllm", "transformers")
MAX_LINE = 4096

# Uvicorn's own start lines, printed by all three engines' HTTP servers
# (https://github.com/sgl-project/sglang/issues/2468, vllm-project/vllm#14452).
_UVICORN = (("listening", "Uvicorn running on"), ("listening", "Application startup complete"))
# The HF loader's progress bar (vllm-project/vllm#15105, sgl-project/sglang#7227).
_SHARDS = ("weights", "Loading safetensors checkpoint shards")

# (phase, fragment): the first line holding the fragment enters the phase.
_MARKS: dict[str, tuple[tuple[str, str], ...]] = {
    "sglang": (
        # "[2025-06-19 15:12:27] Load weight end. type=Qwen3ForCausalLM, ..." and the rest:
        # sgl-project/sglang#7227, #2468, #11716, #4233; "Load weight begin. avail mem=" is
        # sglang's srt/model_executor/model_runner.py (logger.info in load_model).
        ("weights", "Load weight begin"),
        _SHARDS,
        ("kv_cache", "Load weight end"),
        ("kv_cache", "KV Cache is allocated"),
        ("kv_cache", "Memory pool end"),
        ("graph_capture", "Capture cuda graph begin"),
        ("warmup", "Capture cuda graph end"),
        ("warmup", "max_total_num_tokens="),
        *_UVICORN,
    ),
    "vllm": (
        # vllm-project/vllm#28143 ("Starting to load model"), #29335 ("Model loading took",
        # "Available KV cache memory"), #19794 ("Capturing CUDA graphs", "Graph capturing
        # finished", "init engine (profile, create kv cache, warmup model) took"), #11349
        # ("Capturing cudagraphs for decoding"), #9763 ("Starting vLLM API server").
        ("weights", "Starting to load model"),
        ("weights", "Loading model weights"),
        _SHARDS,
        ("kv_cache", "Loading weights took"),
        ("kv_cache", "Model loading took"),
        ("kv_cache", "Memory profiling takes"),
        ("kv_cache", "Available KV cache memory"),
        ("kv_cache", "GPU KV cache size"),
        ("kv_cache", "# GPU blocks"),
        ("kv_cache", "# cuda blocks"),
        ("graph_capture", "Capturing CUDA graph"),
        ("graph_capture", "Capturing cudagraphs"),
        ("graph_capture", "Capturing the model for CUDA graphs"),
        ("warmup", "Graph capturing finished"),
        ("warmup", "init engine (profile, create kv cache, warmup model) took"),
        ("listening", "Starting vLLM API server"),
        *_UVICORN,
    ),
    "transformers": (
        # transformers 5.17 `transformers serve MODEL`: "[transformers] Loading /m@main", then
        # its "Loading weights: 100%|...| 21/21" bar, then Uvicorn (captured on this project's
        # VM: tests/fixtures/serve/transformers/serve-cpu-local.log). 4.x: "Loading checkpoint
        # shards".
        ("weights", "[transformers] Loading "),
        ("weights", "Loading weights"),
        ("weights", "Loading checkpoint shards"),
        *_UVICORN,
    ),
}

# The attention backend each engine says it chose.
_BACKEND_PATTERNS = (
    # vLLM >= 0.11: "Using FLASH_ATTN attention backend out of potential backends: [...]"
    # (vllm-project/vllm#45288)
    re.compile(r"Using (\w+) attention backend out of potential backends"),
    # vLLM V1 0.8-0.10: "Using Flash Attention backend on V1 engine." (vllm-project/vllm#15105)
    # and "Using FlashInfer backend." (older V0)
    re.compile(r"Using (Flash Attention|FlashInfer|FlashMLA|Triton|XFormers|Torch SDPA) backend"),
    # SGLang: "Attention backend not specified. Use fa3 backend by default." (LMCache/LMCache#2400)
    re.compile(r"Attention backend not specified\. Use (\w+) backend by default"),
    # SGLang server_args dump: "attention_backend='flashinfer'"
    re.compile(r"\battention_backend='(\w+)'"),
    # SGLang: "MLA optimization is turned on. Use triton backend." (sgl-project/sglang#4233)
    re.compile(r"MLA optimization is turned on\. Use (\w+) backend"),
)
_BACKEND_NAMES = {
    "flash attention": "flash_attn",
    "flash_attn": "flash_attn",
    "flashinfer": "flashinfer",
    "flashmla": "flashmla",
    "triton": "triton",
    "triton_attn": "triton",
    "xformers": "xformers",
    "torch sdpa": "torch_sdpa",
    "flex_attention": "flex_attention",
}
_BACKEND_WORD = re.compile(r"^[a-z0-9_]{1,32}$")

# FlashInfer compiling at start: its ninja/nvcc build under ~/.cache/flashinfer
# (sgl-project/sglang#7855, vllm-project/vllm#36077), or its own "no prebuilt kernels" notice
# (sgl-project/sglang#4389). FlashInfer in use without such a line: it did not compile.
_JIT_BUILD = ("Prebuilt kernels not found, using JIT backend",)
_JIT_BUILD_PAIRS = (
    ("nvcc", "flashinfer"),
    ("ninja", "flashinfer"),
    ("compilation of", "flashinfer"),
)
_FLASHINFER_USED = ("flashinfer.jit:", "Using FlashInfer for top-p & top-k sampling")


def backend_name(raw: str) -> str | None:
    """An engine's backend word as one lowercase name; None for anything else."""
    name = _BACKEND_NAMES.get(raw.strip().lower(), raw.strip().lower())
    return name if _BACKEND_WORD.match(name) else None


class PhaseTracker:
    """Feed the engine's log lines in order; each feed returns the phase that line enters."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.phase = "launch"
        self._marks = _MARKS.get(engine, _UVICORN)
        self._backend: str | None = None
        self._jit: bool | None = None
        self._flashinfer_seen = False

    def feed(self, line: str) -> str | None:
        """The phase this line enters when it moves the engine forward, else None."""
        if not isinstance(line, str):
            line = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
        line = line[:MAX_LINE]
        self._facts(line)
        at = PHASES.index(self.phase)
        for phase, fragment in self._marks:
            if fragment in line and PHASES.index(phase) > at:
                self.phase = phase
                if phase == "listening" and self._jit is None and self._flashinfer_seen:
                    self._jit = False
                return phase
        return None

    def _facts(self, line: str) -> None:
        if self._backend is None:
            for pattern in _BACKEND_PATTERNS:
                m = pattern.search(line)
                if m:
                    self._backend = backend_name(m.group(1))
                    if self._backend == "flashinfer":
                        self._flashinfer_seen = True
                    break
        if self._jit is not True and self.phase != "listening":
            if any(f in line for f in _JIT_BUILD) or any(
                a in line and b in line for a, b in _JIT_BUILD_PAIRS
            ):
                self._jit = True
            elif any(f in line for f in _FLASHINFER_USED):
                self._flashinfer_seen = True

    @property
    def facts(self) -> dict[str, object]:
        """attention_backend (a lowercase name or None) and flashinfer_jit: True when FlashInfer
        compiled kernels at start, False when it was in use and did not before listening,
        None when the log does not say."""
        return {"attention_backend": self._backend, "flashinfer_jit": self._jit}
