"""gpudash verify: prove on the GPUs that the serving stack works and the hardware performs.

Copied to a GPU host by gpudash's `verify` task and run there with the serving venv's python:

    python program.py --out RESULT.json [--expect-gpus N] [--force]

It uses the standard library and torch only, and imports torch inside functions, so that a
venv without torch (or with a broken one) gives one clear FAIL line and a JSON result instead
of a traceback. It measures, per GPU and for the host: torch's import, CUDA build, device
count against the GPUs the probe saw, arch coverage (SASS, binary-compatible SASS, PTX only),
a bf16 matmul (TFLOP/s) and a device-memory copy (GB/s) on every GPU at once, pinned H2D/D2H
(GB/s) one GPU at a time, the peer-access matrix, an NCCL all-reduce over all GPUs (one
process per GPU through torch.distributed, reported as nccl-tests' busbw), and FlashInfer,
sgl-kernel and vLLM where installed (each in its own process, so a crashing extension cannot
take this program with it).

Progress goes to stdout as `verify: ...` lines; the result is one JSON document written
atomically to --out. Exit status: 0 nothing failed, 1 something failed, 2 usage, 3 refused
(another process holds GPU memory; --force measures anyway).

NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1) unless the user set those variables: on shared hosts a program that
uses multicast can put the host's GPUs out of service.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any  # torch's objects: torch is on the GPU host only

SCHEMA = 1
BUSY_MIB = 1024
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
MATMUL_N = 8192
COPY_BYTES = 1 << 30
HOST_BYTES = 256 << 20
NCCL_BYTES = 1 << 30
NCCL_ITERS = 10
NCCL_TIMEOUT_S = 180.0
ENGINE_TIMEOUT_S = 240.0
# (distribution names, import name); the first installed distribution's version is reported.
ENGINES = (
    (("flashinfer-python", "flashinfer"), "flashinfer"),
    (("sgl-kernel",), "sgl_kernel"),
    (("vllm",), "vllm"),
)
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Failure|Interrupt)\b.*")


def say(message: str) -> None:
    """One progress line, flushed at once: the task streams stdout to the user."""
    print(f"verify: {message}", flush=True)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def error_line(exc: BaseException) -> str:
    """`TypeName: first line of the message`, at most 300 characters."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = type(exc).__name__ + (f": {lines[0]}" if lines else "")
    return text[:300]


def first_error_in(text: str) -> str | None:
    """The last `SomethingError: ...` line of a traceback (the real error, not its frames);
    else the last non-empty line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if _ERROR_LINE.match(line):
            return line[:300]
    return lines[-1][:300] if lines else None


# ---------------------------------------------------------------- arch coverage (pure)

_ARCH = re.compile(r"^(sm|compute)_(\d+?)(\d)([af]?)$")


def parse_arch(entry: str) -> tuple[str, int, int, str] | None:
    """`sm_90a` -> ("sm", 9, 0, "a"); `compute_120` -> ("compute", 12, 0, "")."""
    m = _ARCH.match(entry.strip().lower())
    if not m:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)


def arch_coverage(cc: tuple[int, int], arch_list: list[str]) -> tuple[str, str | None]:
    """How a GPU of compute capability `cc` gets kernels from a build's arch list.

    Returns (verdict, entry): "sass" (machine code for exactly this cc), "compatible" (a
    cubin for X.y runs on X.z with z >= y, same major), "ptx" (only PTX the driver must JIT:
    works, slow first start), or "missing".
    Arch-specific `a` targets run only on their exact cc; family `f` targets run on later
    minors of the same major (NVIDIA, "Blackwell and CUDA 12.9 introduce family-specific
    architecture features", developer.nvidia.com/blog, 2025-05).
    """
    major, minor = cc
    compatible: str | None = None
    ptx: str | None = None
    for entry in arch_list:
        parsed = parse_arch(entry)
        if parsed is None:
            continue
        kind, emaj, emin, suffix = parsed
        if kind == "sm":
            if (emaj, emin) == (major, minor):
                return "sass", entry
            if emaj == major and emin < minor and suffix != "a":
                compatible = compatible or entry
        elif (emaj, emin) <= (major, minor) and suffix == "":
            ptx = ptx or entry
    if compatible:
        return "compatible", compatible
    if ptx:
        return "ptx", ptx
    return "missing", None


# ---------------------------------------------------------------- nvidia-smi facts


def _smi(args: list[str]) -> list[list[str]] | None:
    try:
        run = subprocess.run(
            ["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if run.returncode != 0:
        return None
    return [[c.strip() for c in ln.split(",")] for ln in run.stdout.splitlines() if ln.strip()]


def _int(text: str) -> int | None:
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None


_SMI_FIELDS = (
    "index,uuid,pci.bus_id,driver_version,memory.used,"
    "pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current"
)


def smi_facts() -> dict:
    """Driver version, each GPU's PCIe link and the memory other processes hold, from
    nvidia-smi (it needs no CUDA context, unlike torch.cuda.mem_get_info)."""
    out: dict = {"gpus": [], "apps": None}
    rows = _smi([f"--query-gpu={_SMI_FIELDS}", "--format=csv,noheader,nounits"])
    for row in rows or []:
        if len(row) < 9 or _int(row[0]) is None:  # a header, or not this query's answer
            continue
        if re.fullmatch(r"\d+(\.\d+)+", row[3]):
            out["driver"] = row[3]
        out["gpus"].append(
            {
                "index": _int(row[0]),
                "uuid": row[1],
                "bus_id": row[2],
                "memory_used_mib": _int(row[4]),
                "pcie_gen_max": _int(row[5]),
                "pcie_width_max": _int(row[6]),
                "pcie_gen": _int(row[7]),
                "pcie_width": _int(row[8]),
            }
        )
    apps = _smi(["--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"])
    if apps is not None:
        out["apps"] = [
            {"uuid": a[0], "pid": _int(a[1]), "mib": _int(a[2])} for a in apps if len(a) >= 3
        ]
    return out


def busy_gpus(facts: dict) -> dict[int, int]:
    """nvidia-smi index -> MiB held by other processes, for GPUs past BUSY_MIB.

    The larger of the compute processes' memory and the GPU's used memory counts: in a
    container or VM the process list can be empty while the memory is taken. Read before
    this program makes a CUDA context, so none of it is ours."""
    held: dict[int, int] = {}
    by_uuid = {g["uuid"]: g["index"] for g in facts["gpus"]}
    for app in facts.get("apps") or ():
        index = by_uuid.get(app["uuid"])
        if index is not None:
            held[index] = held.get(index, 0) + (app["mib"] or 0)
    for gpu in facts["gpus"]:
        if gpu["index"] is not None and gpu["memory_used_mib"] is not None:
            held[gpu["index"]] = max(held.get(gpu["index"], 0), gpu["memory_used_mib"])
    return {i: mib for i, mib in held.items() if mib > BUSY_MIB}


def _norm_uuid(text: object) -> str:
    """`GPU-D12F...` (nvidia-smi) and `d12f...` (torch) -> `d12f...`."""
    value = str(text or "").lower()
    return value[4:] if value.startswith("gpu-") else value


# ---------------------------------------------------------------- measurements


def _elapsed_s(torch: Any, fn: Any, iters: int) -> float:
    """Seconds for `iters` calls of fn on the current device, by CUDA events."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _matmul(torch: Any, dev: Any, n: int, gpu: dict) -> None:
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    warm_until = time.monotonic() + 0.5  # clocks ramp up from idle: warm up by time
    while time.monotonic() < warm_until:
        for _ in range(10):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize(dev)
    iters = 30
    reps = [_elapsed_s(torch, lambda: torch.matmul(a, b, out=c), iters) for _ in range(3)]
    gpu["matmul_tflops_reps"] = [round(2 * n**3 * iters / s / 1e12, 1) for s in reps]
    gpu["matmul_tflops"] = _median(gpu["matmul_tflops_reps"])
    # Eight rows against an fp32 product: a kernel that runs but computes garbage fails here.
    ref = a[:8].float() @ b.float()
    err = ((c[:8].float() - ref).abs().max() / ref.abs().max()).item()
    gpu["matmul_rel_err"] = round(err, 5)
    gpu["matmul_ok"] = bool(err < 0.02)


def _copy(torch: Any, dev: Any, gpu: dict) -> None:
    src = torch.empty(COPY_BYTES, device=dev, dtype=torch.uint8)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    iters = 20
    reps = [_elapsed_s(torch, lambda: dst.copy_(src), iters) for _ in range(3)]
    # Bytes read plus bytes written, as HBM bandwidth is quoted.
    gpu["copy_gbps_reps"] = [round(2 * COPY_BYTES * iters / s / 1e9, 1) for s in reps]
    gpu["copy_gbps"] = _median(gpu["copy_gbps_reps"])


def _host_copies(torch: Any, dev: Any, gpu: dict, host: Any) -> None:
    buf = torch.empty(HOST_BYTES, device=dev, dtype=torch.uint8)
    for direction, fn in (
        ("h2d", lambda: buf.copy_(host, non_blocking=True)),
        ("d2h", lambda: host.copy_(buf, non_blocking=True)),
    ):
        fn()
        torch.cuda.synchronize(dev)
        seconds = _elapsed_s(torch, fn, 10)
        gpu[f"{direction}_gbps"] = round(HOST_BYTES * 10 / seconds / 1e9, 1)


def bench_gpu(
    torch: Any, index: int, gpu: dict, n: int, host_lock: threading.Lock, host: Any
) -> None:
    """Matmul and copy on one GPU (every GPU's thread at once), then H2D/D2H under a lock so
    that each link is measured alone. Fills `gpu`; an error lands in gpu["error"]."""
    try:
        torch.cuda.set_device(index)
        dev = torch.device("cuda", index)
        _matmul(torch, dev, n, gpu)
        _copy(torch, dev, gpu)
        torch.cuda.synchronize(dev)
        with host_lock:
            _host_copies(torch, dev, gpu, host)
    except Exception as exc:
        gpu["error"] = error_line(exc)
    finally:
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()


def nccl_worker(rank: int, world: int, port: int, nbytes: int, iters: int, out_dir: str) -> None:
    """One rank of the all-reduce (its own process): a checked sum, then `iters` timed ones."""
    import torch
    import torch.distributed as dist

    report: dict = {"rank": rank}
    try:
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        kwargs = {"device_id": dev}
        url = f"tcp://127.0.0.1:{port}"
        try:
            dist.init_process_group("nccl", init_method=url, rank=rank, world_size=world, **kwargs)
        except TypeError:  # torch without device_id
            dist.init_process_group("nccl", init_method=url, rank=rank, world_size=world)
        x = torch.full((nbytes // 2,), float(rank + 1), dtype=torch.bfloat16, device=dev)
        dist.all_reduce(x)
        want = world * (world + 1) / 2
        report["ok"] = bool((x[:: max(1, x.numel() // 4096)] == want).all().item())
        x.fill_(1.0)
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize(dev)
        dist.barrier()
        seconds = _elapsed_s(torch, lambda: dist.all_reduce(x), iters) / iters
        slowest = torch.tensor([seconds], dtype=torch.float64, device=dev)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        report["seconds"] = slowest.item()
        with contextlib.suppress(Exception):
            report["nccl_version"] = ".".join(map(str, torch.cuda.nccl.version()))
        dist.destroy_process_group()
    except Exception as exc:
        report["error"] = error_line(exc)
    path = os.path.join(out_dir, f"rank{rank}.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh)
    if "error" in report:
        sys.exit(1)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_nccl(torch: Any, world: int, nbytes: int, iters: int) -> dict:
    """All-reduce over all GPUs, one spawned process per GPU, bounded by NCCL_TIMEOUT_S."""
    result: dict = {"world": world, "bytes": nbytes, "iters": iters, "dtype": "bfloat16"}
    try:
        import torch.distributed as dist
        import torch.multiprocessing as mp

        if not (dist.is_available() and dist.is_nccl_available()):
            result["error"] = "this torch has no NCCL backend"
            return result
    except Exception as exc:
        result["error"] = error_line(exc)
        return result
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="gpudash-verify-") as out_dir:
        started = time.monotonic()
        try:
            ctx = mp.start_processes(
                nccl_worker,
                args=(world, port, nbytes, iters, out_dir),
                nprocs=world,
                join=False,
                start_method="spawn",
            )
            while not ctx.join(timeout=1.0):
                if time.monotonic() - started > NCCL_TIMEOUT_S:
                    for proc in ctx.processes:
                        if proc.is_alive():
                            proc.kill()
                    result["error"] = f"timed out after {NCCL_TIMEOUT_S:.0f} s"
                    break
        except Exception as exc:
            result["error"] = first_error_in(str(exc)) or error_line(exc)
        result["wall_s"] = round(time.monotonic() - started, 2)
        ranks = []
        for rank in range(world):
            path = os.path.join(out_dir, f"rank{rank}.json")
            with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as fh:
                ranks.append(json.load(fh))
    errors = [r["error"] for r in ranks if r.get("error")]
    if errors:  # a rank's own error says more than "process 1 exited with code 1"
        result["error"] = errors[0]
    zero: dict = next((r for r in ranks if r.get("rank") == 0), {})
    if zero.get("seconds"):
        seconds = zero["seconds"]
        algbw = nbytes / seconds / 1e9
        result["time_ms"] = round(seconds * 1e3, 3)
        result["algbw_gbps"] = round(algbw, 1)
        # nccl-tests doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n for all-reduce.
        result["busbw_gbps"] = round(algbw * 2 * (world - 1) / world, 1)
    result["ok"] = bool(ranks) and len(ranks) == world and all(r.get("ok") for r in ranks)
    if zero.get("nccl_version"):
        result["nccl_version"] = zero["nccl_version"]
    return result


# ---------------------------------------------------------------- engines


def engine_probe(module: str) -> dict:
    """Run in a child process: import one engine and run one small op on GPU 0."""
    out: dict = {"module": module}
    started = time.monotonic()
    try:
        import importlib

        import torch

        mod = importlib.import_module(module)
        out["import_ok"] = True
        out["import_s"] = round(time.monotonic() - started, 2)
        if module == "vllm":
            importlib.import_module("vllm._C")  # the compiled ops: where arch/ABI breaks show
            out["op"] = "import vllm._C"
            out["op_ok"] = True
        else:
            x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
            w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
            if module == "flashinfer":
                out["op"] = "flashinfer.norm.rmsnorm"
                y = mod.norm.rmsnorm(x, w, 1e-6)
            else:
                out["op"] = "sgl_kernel.rmsnorm"
                y = mod.rmsnorm(x, w, 1e-6)
            xf = x.float()
            ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
            err = (y.float() - ref).abs().max().item()
            out["op_ok"] = bool(err < 0.05)
            if not out["op_ok"]:
                out["error"] = f"wrong result: max abs error {err:.3g}"
    except BaseException as exc:  # the child reports whatever broke, SystemExit included
        out.setdefault("import_ok", False)
        out["error"] = error_line(exc)
    out["seconds"] = round(time.monotonic() - started, 2)
    return out


def installed_version(dists: tuple[str, ...]) -> tuple[str, str] | None:
    from importlib import metadata

    for dist in dists:
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        except Exception:
            continue
    return None


def run_engines() -> list[dict]:
    """Each installed engine in its own python (concurrently), bounded by ENGINE_TIMEOUT_S."""
    jobs = []
    for dists, module in ENGINES:
        found = installed_version(dists)
        if found is None:
            continue
        say(f"{module} {found[1]}: import and one op...")
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--engine", module],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        jobs.append((module, found, proc, time.monotonic()))
    results = []
    for module, (dist, version), proc, started in jobs:
        entry: dict = {"name": module, "dist": dist, "version": version}
        left = max(1.0, ENGINE_TIMEOUT_S - (time.monotonic() - started))
        try:
            stdout, stderr = proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            entry.update(import_ok=False, error=f"timed out after {ENGINE_TIMEOUT_S:.0f} s")
            results.append(entry)
            continue
        last = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        with contextlib.suppress(ValueError):
            entry.update(json.loads(last[-1]) if last else {})
        if "import_ok" not in entry:
            entry["import_ok"] = False
            entry["error"] = first_error_in(stderr) or f"exited {proc.returncode}, no result"
        results.append(entry)
    return results


# ---------------------------------------------------------------- the run


def _write(path: str, result: dict) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".verify-", suffix=".json", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def _fail(result: dict, reason: str) -> None:
    result.setdefault("failures", []).append(reason)
    say(f"FAIL: {reason}")


def measure(args: argparse.Namespace, result: dict) -> None:
    for name, value in MULTICAST_OFF.items():
        os.environ.setdefault(name, value)
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # torch's order = nvidia-smi's
    result["env"] = {
        k: os.environ.get(k) for k in (*MULTICAST_OFF, "CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES")
    }
    facts = smi_facts()
    result["driver"] = facts.get("driver")
    busy = busy_gpus(facts)
    result["busy"] = {str(i): mib for i, mib in busy.items()}
    if busy and not args.force:
        held = ", ".join(f"GPU {i}: {mib} MiB" for i, mib in sorted(busy.items()))
        result["refused"] = f"other processes hold GPU memory ({held}); --force measures anyway"
        say(f"REFUSED: {result['refused']}")
        return

    started = time.monotonic()
    try:
        import torch
    except Exception as exc:
        result["torch"] = {"import_ok": False, "error": error_line(exc)}
        _fail(result, f"torch does not import in {sys.executable}: {error_line(exc)}")
        return
    imported = time.monotonic()
    result["torch_import_s"] = round(imported - started, 2)
    info: dict = {"import_ok": True, "version": torch.__version__, "cuda": torch.version.cuda}
    result["torch"] = info
    took = imported - started
    say(f"torch {torch.__version__} (CUDA {torch.version.cuda}) imported in {took:.1f} s")
    try:
        info["available"] = bool(torch.cuda.is_available())
        info["device_count"] = torch.cuda.device_count() if info["available"] else 0
        info["arch_list"] = list(torch.cuda.get_arch_list()) if info["available"] else []
    except Exception as exc:
        info["available"] = False
        info["error"] = error_line(exc)
    if torch.version.cuda is None:
        _fail(result, f"torch {torch.__version__} is a CPU-only build")
        return
    if not info["available"]:
        _fail(
            result,
            "torch.cuda.is_available() is False"
            + (f": {info['error']}" if info.get("error") else ""),
        )
        return
    count = info["device_count"]
    if args.expect_gpus is not None and count != args.expect_gpus:
        _fail(result, f"CUDA sees {count} GPUs, the probe saw {args.expect_gpus}")
    gpus = []
    smi_by_uuid = {_norm_uuid(g["uuid"]): g for g in facts["gpus"]}
    for i in range(count):
        gpu: dict = {"index": i}
        try:
            props = torch.cuda.get_device_properties(i)
            gpu.update(
                name=props.name,
                cc=f"{props.major}.{props.minor}",
                memory_mib=props.total_memory // (1 << 20),
                sms=props.multi_processor_count,
            )
            uuid = _norm_uuid(getattr(props, "uuid", ""))
            gpu["uuid"] = uuid or None
            smi = smi_by_uuid.get(uuid) or (
                facts["gpus"][i] if len(facts["gpus"]) == count else None
            )
            if smi:
                gpu["bus_id"] = smi["bus_id"]
                gpu["smi_index"] = smi["index"]
                for key in ("pcie_gen_max", "pcie_width_max", "pcie_gen", "pcie_width"):
                    gpu[key] = smi[key]
            verdict, via = arch_coverage((props.major, props.minor), info["arch_list"])
            gpu["arch"] = verdict
            gpu["arch_via"] = via
            sm = f"sm_{props.major}{props.minor}"
            if verdict == "missing":
                _fail(result, f"GPU {i} ({sm}): torch {torch.__version__} has no kernels for it")
            elif verdict == "ptx":
                say(f"WARN: GPU {i} ({sm}) runs only through PTX JIT ({via}): slow first start")
        except Exception as exc:
            gpu["error"] = error_line(exc)
        gpus.append(gpu)
    result["gpus"] = gpus

    host = torch.empty(HOST_BYTES, dtype=torch.uint8, pin_memory=True)
    lock = threading.Lock()
    say(f"bf16 matmul {args.n}^3 and a {COPY_BYTES >> 30} GiB copy on {count} GPU(s) at once...")
    threads = [
        threading.Thread(target=bench_gpu, args=(torch, g["index"], g, args.n, lock, host))
        for g in gpus
        if "error" not in g and g.get("arch") != "missing"
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    del host
    for g in gpus:
        if g.get("error"):
            _fail(result, f"GPU {g['index']}: {g['error']}")
            continue
        if "matmul_tflops" in g:
            say(
                f"GPU {g['index']} {g.get('name')}: matmul {g['matmul_tflops']} TFLOP/s, "
                f"copy {g.get('copy_gbps')} GB/s, H2D {g.get('h2d_gbps')} GB/s, "
                f"D2H {g.get('d2h_gbps')} GB/s"
            )
        if g.get("matmul_ok") is False:
            _fail(result, f"GPU {g['index']}: wrong matmul result (rel err {g['matmul_rel_err']})")

    peer = [
        [None if i == j else bool(torch.cuda.can_device_access_peer(i, j)) for j in range(count)]
        for i in range(count)
    ]
    result["peer"] = peer
    if count >= args.nccl_min_gpus:
        size = f"{NCCL_BYTES >> 30} GiB bf16"
        say(f"NCCL all-reduce, {size} over {count} GPUs, {NCCL_ITERS} iterations...")
        nccl = run_nccl(torch, count, NCCL_BYTES, NCCL_ITERS)
        result["nccl"] = nccl
        if nccl.get("error") or not nccl.get("ok"):
            _fail(result, f"NCCL all-reduce: {nccl.get('error') or 'wrong sum'}")
        else:
            say(f"NCCL all-reduce: busbw {nccl['busbw_gbps']} GB/s ({nccl['time_ms']} ms per op)")
    result["gpu_s"] = round(time.monotonic() - imported, 2)
    result["engines"] = run_engines()
    for engine in result["engines"]:
        if engine.get("error"):
            _fail(result, f"{engine['name']} {engine.get('version')}: {engine['error']}")
        else:
            say(f"{engine['name']} {engine.get('version')}: {engine.get('op')} ok")
    result["after_import_s"] = round(time.monotonic() - imported, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpudash-verify", description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="where to write the JSON result")
    parser.add_argument("--expect-gpus", type=int, default=None, help="GPUs the probe saw")
    parser.add_argument("--force", action="store_true", help="measure even on a busy GPU")
    parser.add_argument("--n", type=int, default=MATMUL_N, help=argparse.SUPPRESS)
    # Internal: run the all-reduce from this many GPUs (1 tests its mechanics on one GPU).
    parser.add_argument("--nccl-min-gpus", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)  # internal: one engine's child
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.engine:
        print(json.dumps(engine_probe(args.engine)), flush=True)
        return 0
    if not args.out:
        print("gpudash-verify: --out PATH is required", file=sys.stderr)
        return 2
    started = time.monotonic()
    result: dict = {
        "schema": SCHEMA,
        "program": "gpudash-verify",
        "started": now_iso(),
        "host": socket.gethostname(),
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "expect_gpus": args.expect_gpus,
        "force": bool(args.force),
    }
    try:
        measure(args, result)
    except Exception as exc:
        _fail(result, f"verify itself broke: {error_line(exc)}")
    result["finished"] = now_iso()
    result["duration_s"] = round(time.monotonic() - started, 2)
    if result.get("refused"):
        result["status"] = "refused"
    else:
        result["status"] = "fail" if result.get("failures") else "ok"
    try:
        _write(args.out, result)
    except OSError as exc:
        print(f"gpudash-verify: cannot write {args.out}: {error_line(exc)}", file=sys.stderr)
        return 1
    say(f"done in {result['duration_s']} s: {result['status'].upper()} -> {args.out}")
    return {"ok": 0, "fail": 1, "refused": 3}[result["status"]]


if __name__ == "__main__":
    sys.exit(main())
