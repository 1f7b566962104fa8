"""Preflight facts the probe does not collect, checked on the host by the supervisor at
launch, before the engine starts: which port is free and who holds a taken one, free space in
the JIT caches and /dev/shm, a C compiler for Triton, the model folder, and whether tp divides
the model's attention heads. (Checked here rather than added to the probe: they matter only
at launch, and a port or a cache can change between a probe and a launch.)

Travels to the host: stdlib only, Python 3.9+. Each check returns refusal lines
"CODE: what (why); fix: ..." and never raises.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket

FIRST_PORT = 30000
GIB = 1 << 30
CACHE_MIN = 2 * GIB  # a FlashInfer JIT build writes ~1 GiB of objects (its cache of one run)
SHM_MIN = 1 * GIB  # NCCL and the engines' workers share tensors through /dev/shm
WEIGHTS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf")
CACHES = {
    # Each engine's JIT caches (FlashInfer: ~/.cache/flashinfer, Triton: ~/.triton,
    # vLLM: ~/.cache/vllm; their docs' default locations)
    "sglang": ("~/.cache/flashinfer", "~/.triton"),
    "vllm": ("~/.cache/vllm", "~/.cache/flashinfer", "~/.triton"),
    "transformers": (),
}


def port_free(port: int) -> bool:
    """Whether an engine could bind 127.0.0.1:port now (SO_REUSEADDR as uvicorn and the
    engines set it: a TIME_WAIT socket does not count, a listener does)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def first_free_port(start: int = FIRST_PORT, tries: int = 200) -> int | None:
    for port in range(start, min(start + tries, 65536)):
        if port_free(port):
            return port
    return None


def port_holder(port: int) -> str:
    """Who listens on `port`: "python3 (pid 123)" from /proc (the listening socket's inode,
    then the process holding it); what this login cannot see is said so."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] == "0A" and cols[1].endswith(f":{port:04X}"):
                        inodes.add(cols[9])
        except OSError:
            continue
    if not inodes:
        return "a process (no listening socket seen in /proc/net/tcp)"
    wanted = {f"socket:[{i}]" for i in inodes}
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            if os.readlink(fd) in wanted:
                pid = fd.split("/")[2]
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read(300).replace(b"\0", b" ").decode("utf-8", "replace").strip()
                return f"pid {pid} ({' '.join(cmd.split()[:4])[:120]})"
        except OSError:
            continue
    return "a process of another user (run as root to name it)"


def running_group(job: str) -> int | None:
    """The process group in JOB/service.pgid when it still has a process (a server this
    task left running); None when there is none or it is gone."""
    try:
        with open(os.path.join(job, "service.pgid")) as f:
            pgid = int(f.read().strip())
        os.killpg(pgid, 0)
    except PermissionError:
        return pgid  # alive, another user's
    except (OSError, ValueError):
        return None
    return pgid


def _free(path: str) -> tuple[str, int | None]:
    """(the existing folder measured, its free bytes) for a path that may not exist yet."""
    p = os.path.expanduser(path)
    while p and not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    try:
        st = os.statvfs(p)
        return p, st.f_bavail * st.f_frsize
    except OSError:
        return p, None


def disk(engine: str, tp: int) -> list[str]:
    out = []
    for cache in CACHES.get(engine, ()):
        where, free = _free(cache)
        if free is not None and free < CACHE_MIN:
            out.append(
                f"serve.disk: {cache} has {free / GIB:.1f} GiB free on {where} (JIT builds"
                f" need ~{CACHE_MIN // GIB} GiB and fail half-written); fix: free space there"
            )
    if engine != "transformers" and os.path.isdir("/dev/shm"):
        where, free = _free("/dev/shm")
        if free is not None and free < SHM_MIN:
            out.append(
                f"serve.disk: /dev/shm has {free / GIB:.2f} GiB free (NCCL and the engine's"
                f" workers share memory there{'; tp ' + str(tp) if tp > 1 else ''}); fix:"
                " enlarge it (docker --shm-size=16g, or remount tmpfs)"
            )
    return out


def compiler(engine: str, device: str) -> list[str]:
    """Triton compiles a small C launcher at first use (it runs $CC, else cc/gcc/clang)."""
    if engine == "transformers" and device == "cpu":
        return []
    cc = os.environ.get("CC")
    if (cc and shutil.which(cc)) or any(shutil.which(c) for c in ("cc", "gcc", "clang")):
        return []
    return [
        "serve.jit: no C compiler (cc, gcc or clang) on PATH (Triton builds its launcher with"
        " one at the first kernel); fix: install gcc (apt-get install build-essential)"
    ]


def model(path: str, tp: int) -> list[str]:
    """A model folder (not a hub id): config.json and weights present; tp divides the
    attention heads when config.json names them."""
    if not path.startswith("/"):
        return []
    if not os.path.isdir(path):
        return [f"serve.model_access: no folder {path}; fix: download it (the model task)"]
    out = []
    config = os.path.join(path, "config.json")
    if not os.path.isfile(config):
        out.append(f"serve.model_access: {path} has no config.json; fix: download it again")
    if not any(glob.glob(os.path.join(path, w)) for w in WEIGHTS):
        out.append(
            f"serve.model_access: {path} has no weights (*.safetensors, *.bin, *.gguf);"
            " fix: finish the download (the model task resumes it)"
        )
    heads = attention_heads(config)
    if heads and tp > 1 and heads % tp:
        out.append(
            f"serve.tp: tp {tp} does not divide the model's {heads} attention heads"
            f" (config.json); fix: set params.tp to a divisor of {heads}"
        )
    return out


def attention_heads(config: str) -> int | None:
    """num_attention_heads from config.json (or its text_config, for multimodal models)."""
    try:
        with open(config, encoding="utf-8") as f:
            data = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return None
    for where in (data, data.get("text_config") if isinstance(data, dict) else None):
        if isinstance(where, dict):
            heads = where.get("num_attention_heads")
            if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0:
                return heads
    return None


def all_checks(engine: str, model_path: str, tp: int, device: str) -> list[str]:
    return disk(engine, tp) + compiler(engine, device) + model(model_path, tp)
