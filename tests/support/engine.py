"""A real inference engine for the serve tests: `transformers serve` on the CPU.

SGLang and vLLM cannot run here (no GPU, wheels of hundreds of MB), but `transformers serve`
(transformers 5.17, extra `serving`) is a real OpenAI-compatible server: real HTTP, real
streaming, real tokens from a real model. This module builds, once per machine, a venv with
it (cached under the login's real home, keyed by the versions, so a second run costs nothing)
and a tiny random-weight model made offline: a 2-layer Llama config, a byte-level BPE
tokenizer trained with `tokenizers` from a few strings, and a chat template.

pip takes torch 2.13.0's CPU wheel from this machine's own disk (/opt/wheels, no network;
/work/.library/env/machines/python.md); the build took ~93 s in the issue's note.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

SERVE_SPECS = ("torch==2.13.0", "transformers[serving]==5.17.0", "requests")
"""What the venv holds: `transformers serve` imports `requests`, which the extra does not pull."""

_KEY = hashlib.sha256(
    ("\n".join(SERVE_SPECS) + f"\npy{sys.version_info[0]}.{sys.version_info[1]}").encode()
).hexdigest()[:12]


def cache_root() -> Path:
    """The login's own cache, not $HOME: the tests run with a scrubbed HOME (conftest)."""
    base = os.environ.get("GPUDASH_TEST_CACHE")
    if base:
        return Path(base)
    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "gpudash-tests"


_MODEL_SCRIPT = r"""
import json, sys
from pathlib import Path
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
import torch

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
texts = [
    "hello world, this is a tiny model for gpudash's serve tests",
    "the quick brown fox jumps over the lazy dog",
    "user assistant system: say something, anything at all",
    "GPUs, servers, tokens and streams: 0123456789",
] * 20
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(
    vocab_size=512, special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
)
tok.train_from_iterator(texts, trainer)
fast = PreTrainedTokenizerFast(
    tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
    pad_token="<pad>",
)
fast.chat_template = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant: {% endif %}"
)
fast.save_pretrained(out)
torch.manual_seed(0)
# argv: OUT [HIDDEN LAYERS DTYPE]: the tests' 64 x 2 float32 by default; the H200 run
# (bench/device_serve.sh) builds 1024 x 8 bfloat16
hidden = int(sys.argv[2]) if len(sys.argv) > 2 else 64
layers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
heads = max(4, hidden // 64)
config = LlamaConfig(
    vocab_size=len(fast), hidden_size=hidden, intermediate_size=2 * hidden,
    num_hidden_layers=layers,
    num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=512,
    bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
    pad_token_id=fast.pad_token_id,
)
model = LlamaForCausalLM(config)
if len(sys.argv) > 4:
    model = model.to(getattr(torch, sys.argv[4]))
model.generation_config.eos_token_id = None  # random weights: always generate max_tokens
model.save_pretrained(out)
print(json.dumps(sorted(p.name for p in out.iterdir())))
"""


def _locked_build(target: Path, build) -> Path:  # type: ignore[no-untyped-def]
    """Build `target` once: under a lock (parallel tests), marked complete only at the end."""
    target.parent.mkdir(parents=True, exist_ok=True)
    done = target / ".complete"
    if done.exists():
        return target
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        started = time.monotonic()
        build(target)
        done.write_text(f"{time.monotonic() - started:.1f}\n")
    return target


def _build_venv(target: Path) -> None:
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(target)], check=True)
    subprocess.run(
        [str(target / "bin" / "python"), "-m", "pip", "install", "-q", *SERVE_SPECS],
        check=True,
    )


def serve_venv() -> Path:
    """The venv with `transformers serve` (built on first use: ~1.5 min, then cached)."""
    return _locked_build(cache_root() / f"serve-venv-{_KEY}", _build_venv)


def tiny_model() -> Path:
    """A tiny random-weight Llama with a trained tokenizer and a chat template (built offline
    with the serve venv's python on first use, ~8 s, then cached beside it)."""
    venv = serve_venv()

    def build(target: Path) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", _MODEL_SCRIPT, str(target)],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )

    return _locked_build(cache_root() / f"tiny-llama-{_KEY}", build)


def build_seconds(path: Path) -> float | None:
    """How long the cached build of `path` took when it was made (its `.complete` marker)."""
    try:
        return float((path / ".complete").read_text())
    except (OSError, ValueError):
        return None


if __name__ == "__main__":  # build both ahead of the tests: python -m tests.support.engine
    v = serve_venv()
    m = tiny_model()
    print(f"{v} built in {build_seconds(v)} s; {m} built in {build_seconds(m)} s")
