"""GPU health: GPUs in ERR!, uncorrected ECC errors, persistence off, MIG on, memory already
taken by other processes, and mixed GPU models on one host."""

from __future__ import annotations

from gpudash.checks.context import Context
from gpudash.checks.finding import Finding, Severity

# Memory a GPU uses with nothing running is a few MiB; above this, something holds it.
MEMORY_IN_USE_MIB = 512


def check(ctx: Context) -> list[Finding]:
    data = ctx.gpus
    if data is None:
        return []
    if data.missing or not data.gpus:
        return [
            Finding(
                Severity.FAIL,
                "gpus.none",
                f"no GPUs: {data.missing or 'nvidia-smi listed none'}",
                why="Without a working NVIDIA driver and visible GPUs nothing else matters.",
                fix="Install the NVIDIA driver (and check the GPUs are passed through), then "
                "re-probe.",
                facts={"missing": data.missing, "notes": list(data.notes)},
            )
        ]
    out: list[Finding] = []
    no_cc = [g for g in data.gpus if not g.cc and not g.error]  # gpus.err covers ERR!
    if no_cc:
        out.append(
            Finding(
                Severity.WARN,
                "gpus.no_cc",
                "compute capability unknown for GPU "
                + ", ".join(f"{g.index} ({g.name or '?'})" for g in no_cc),
                why="Neither the driver (compute_cap), the PCI device id nor the name told it: "
                "which torch and engine wheels have kernels for this GPU cannot be said, and "
                "the torch task will not guess an index.",
                fix="Run `nvidia-smi --query-gpu=name,compute_cap,pci.device_id --format=csv` "
                'on the host; set the torch task\'s cuda = "cuNNN" by hand meanwhile.',
                facts={"gpus": [g.index for g in no_cc], "names": [g.name for g in no_cc]},
            )
        )
    broken = [g.index for g in data.gpus if g.error]
    if broken:
        out.append(
            Finding(
                Severity.FAIL,
                "gpus.err",
                f"GPU {', '.join(map(str, broken))} in ERR! state",
                why="nvidia-smi cannot read the GPU: it has fallen off the bus or its GSP "
                "firmware hung (see `dmesg` for Xid errors); work on it fails.",
                fix="Check `dmesg | grep -i xid`; reset the GPU (`nvidia-smi -r -i N`) or "
                "reboot; if it persists, raise a hardware ticket.",
                facts={"gpus": broken},
            )
        )
    ecc = [(g.index, g.ecc_uncorrected) for g in data.gpus if (g.ecc_uncorrected or 0) > 0]
    if ecc:
        out.append(
            Finding(
                Severity.FAIL,
                "gpus.ecc_uncorrected",
                "uncorrected ECC errors on GPU " + ", ".join(f"{i} ({n})" for i, n in ecc),
                why="Uncorrected (double-bit) memory errors corrupt results and usually end "
                "in a crashed process; the page may need retiring/remapping.",
                fix="Drain the GPU, reset it to trigger row remapping, and re-check; raise a "
                "hardware ticket if the count comes back.",
                facts={f"GPU {i}": n for i, n in ecc},
            )
        )
    off = [g.index for g in data.gpus if g.persistence is False]
    if off:
        out.append(
            Finding(
                Severity.WARN,
                "gpus.persistence_off",
                f"persistence mode off on GPU {_list(off, len(data.gpus))}",
                why="Without persistence the driver tears the GPU down whenever no process "
                "holds it: each start pays seconds of init and settings can reset.",
                fix="Enable nvidia-persistenced (`systemctl enable --now nvidia-persistenced`) "
                "or run `nvidia-smi -pm 1`.",
                facts={"gpus": off},
            )
        )
    mig = [g.index for g in data.gpus if g.mig_mode == "Enabled"]
    if mig:
        out.append(
            Finding(
                Severity.WARN,
                "gpus.mig_enabled",
                f"MIG enabled on GPU {_list(mig, len(data.gpus))}",
                why="With MIG on, a process sees only a slice of the GPU, and tensor "
                "parallelism across MIG instances is not supported by SGLang or vLLM.",
                fix="Disable MIG if the host should serve whole GPUs: `nvidia-smi -i N -mig 0` "
                "(then reset the GPU).",
                facts={"gpus": mig},
            )
        )
    used = [
        (g.index, g.memory_used_mib)
        for g in data.gpus
        if (g.memory_used_mib or 0) > MEMORY_IN_USE_MIB and not g.error
    ]
    procs = [p for p in data.processes if (p.memory_mib or 0) > 0]
    served = _served_pids(ctx)
    ours = [p for p in procs if p.pid in served]
    if ours and len(ours) == len(procs):
        # Every holder is an engine `gpudash run serve` left running on purpose: said, not warned
        out.append(
            Finding(
                Severity.INFO,
                "gpus.memory_served",
                "GPU memory held by the engine gpudash serves here ("
                + ", ".join(f"{served.get(p.pid or 0, '?')} pid {p.pid}" for p in ours[:4])
                + ")",
                why="A served model holds its GPUs' memory by design (weights, KV cache).",
                fix="`gpudash stop TASK HOST` stops it and checks the memory is freed.",
                facts={
                    "processes": [
                        f"GPU {p.gpu} pid {p.pid} {p.name} {p.memory_mib} MiB" for p in ours[:8]
                    ],
                    "judged_from": "nvidia-smi compute apps, the serve section's process group",
                },
            )
        )
        used, procs = [], []
    if used or procs:
        where = sorted({i for i, _ in used} | {p.gpu for p in procs if p.gpu is not None})
        out.append(
            Finding(
                Severity.WARN,
                "gpus.memory_in_use",
                f"GPU memory already in use on GPU {', '.join(map(str, where))}",
                why="A server sized for the whole GPU (--mem-fraction-static, "
                "--gpu-memory-utilization) fails to start or runs out of KV cache.",
                fix="Find the process (`nvidia-smi`, `fuser -v /dev/nvidia*`) and stop it, or "
                "lower the memory fraction.",
                facts={
                    "used_mib": {f"GPU {i}": m for i, m in used},
                    "processes": [
                        f"GPU {p.gpu} pid {p.pid} {p.name} {p.memory_mib} MiB" for p in procs[:8]
                    ],
                },
            )
        )
    names = list(dict.fromkeys(g.name for g in data.gpus if g.name and not g.error))
    if len(names) > 1:
        by_name = {n: [g.index for g in data.gpus if g.name == n] for n in names}
        out.append(
            Finding(
                Severity.WARN,
                "gpus.mixed_models",
                f"mixed GPU models: {', '.join(names)}",
                why="Tensor parallelism runs at the slowest GPU's speed and memory; engines "
                "may refuse mixed compute capabilities.",
                fix="Pin the server to one model's GPUs with CUDA_VISIBLE_DEVICES.",
                facts={n: idx for n, idx in by_name.items()},
            )
        )
    if not out:
        out.append(
            Finding(
                Severity.OK,
                "gpus.ok",
                f"{len(data.gpus)} GPU(s) healthy: no ERR!, no ECC errors, persistence on, "
                "MIG off, memory free",
            )
        )
    return out


def _list(indices: list[int], total: int) -> str:
    return "all" if len(indices) == total and total > 1 else ", ".join(map(str, indices))


def _served_pids(ctx: Context) -> dict[int, str]:
    """pid -> task of every process in the group of a live engine that the serve task
    launched (the serve section lists each live engine's group members)."""
    serve = ctx.section("serve")
    out: dict[int, str] = {}
    for state in getattr(serve, "states", ()):
        if state.alive:
            for pid in (*state.members, state.pid):
                if pid is not None:
                    out[pid] = state.task or state.file
    return out
