#!/bin/sh
# `gpudash run serve` on the lent H200 (no network, no sshd: the local transport), with the
# best real engine the machine allows: `transformers serve` (transformers 5.17 and torch
# 2.11+cu130 are in the image's /opt/torch/.venv) on the GPU, serving a random-weight Llama
# built on the spot (no model can be downloaded there). The wheels `transformers serve` and
# gpudash need beyond the image travel in .whl/ (the device README's recipe). Then the probe
# reads the server back, check judges it, and `gpudash stop` stops it and checks its GPU
# memory is freed. Everything lands in $OUT.
#
#   device run (carry .whl):  sh bench/device_serve.sh
set -u
OUT=${OUT:-/tmp/device-serve}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
# NVLink multicast stays off on the lent machines (device KINDS.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
now() { python3 -c 'import time; print(f"{time.time():.2f}")'; }
since() { python3 -c "import time; print(f'{time.time() - $1:.1f}')"; }
VENV=/opt/torch/.venv
MODEL=/tmp/llama-h1024-l8-bf16
{ nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv; \
  "$VENV/bin/python" -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'; } \
    > "$OUT/machine.txt" 2>&1
MODEL_SCRIPT=$(python3 -c 'from tests.support.engine import _MODEL_SCRIPT; print(_MODEL_SCRIPT)')
t0=$(now)
HF_HUB_OFFLINE=1 "$VENV/bin/python" -c "$MODEL_SCRIPT" "$MODEL" 1024 8 bfloat16 > /dev/null || exit 1
echo "model built in $(since "$t0") s: $(du -sh "$MODEL" | cut -f1)" >> "$OUT/machine.txt"
cat > "$OUT/config.toml" <<TOML
[hosts.h200]
transport = "local"

[tasks.serve]
params = { venv = "$VENV", engine = "transformers", model = "$MODEL", device = "auto", ready_timeout = "10m", stall = "3m" }
env = { PYTHONPATH = "/tmp/site", HF_HUB_OFFLINE = "1", NCCL_NVLS_ENABLE = "0", TORCH_SYMM_MEM_DISABLE_MULTICAST = "1", NVSHMEM_DISABLE_NVLS = "1" }
TOML
G="python3 -m gpudash --config $OUT/config.toml"
$G run serve h200 --show > "$OUT/show.txt" 2>&1
t0=$(now)
$G run serve h200 -y > "$OUT/run.txt" 2>&1
echo "rc $? in $(since "$t0") s" >> "$OUT/run.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$OUT/gpu-while-serving.txt" 2>&1
$G probe h200 --json > "$OUT/probe.json" 2>&1
$G check h200 > "$OUT/check.txt" 2>&1
cp ~/.cache/gpudash/serve/serve.json "$OUT/state.json" 2>/dev/null
tail -n 60 ~/.cache/gpudash/jobs/serve/engine.log > "$OUT/engine-tail.log" 2>/dev/null
$G stop serve h200 > "$OUT/stop.txt" 2>&1
echo "rc $?" >> "$OUT/stop.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$OUT/gpu-after-stop.txt" 2>&1
$G check h200 > "$OUT/check-after-stop.txt" 2>&1
cat "$OUT/run.txt" | tail -n 30
cat "$OUT/stop.txt"
