"""HostResults for the checks' tests, built by the real section parsers from real captures.

    host("h200-1x")                                   the real H200, every section
    host("dgx-h200", gpus={"query": C / "query-h200-8x-varied-mixed.txt"})   one part swapped

Each section's parts come from tests/fixtures/ (h200-1x/, h200-device/, public/,
saved/sources/) or from the varied/derived copies in this folder (README.md says what each
changed); a part given as a str is the text itself (the record formats the probe's shell
prints, for what no capture holds, e.g. a model folder with a missing shard). `None` drops a
section.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from gpudash.model import HostResult, HostState, SectionResult
from gpudash.probe.parts import Part
from gpudash.probe.registry import SECTION_NAMES, section
from tests.support import FIXTURES

C = FIXTURES / "checks"
FIX = C.parent
H200 = FIX / "h200-1x"
PUBLIC = FIX / "public"
DEVICE_HEALTH = FIX / "h200-device" / "health" / "save-smi" / "h200"

PartSource = Path | str


def _sys_parts() -> dict[str, PartSource]:
    lines = (H200 / "sys.txt").read_text().splitlines()
    uname = lines[0].split()
    model = next(line for line in lines if line.startswith("Model name:"))
    return {
        "hostname": uname[1],
        "kernel": uname[2],
        "arch": uname[-2],
        "os": "\n".join(lines[1:14]),
        "cpu": model,
        "ncpu": lines[14],
        "meminfo": "MemTotal:       131899876 kB",  # `free -g` said 125 GiB; not captured exactly
        "uptime": "5321.20 84810.11",
    }


def _net_target() -> str:
    """The H200's one network check (no DNS), in the record format of the network section."""
    lines = (H200 / "net.txt").read_text().splitlines()
    error, timing = lines[0], lines[1]
    curl_rc, dns_rc = lines[2].split("=")[1], lines[3].split("=")[1]
    return (
        "url\thttps://huggingface.co\nhost\thuggingface.co\n"
        f"dns\t{dns_rc}\ncurl\t{curl_rc}\t{timing}\nerr\t{error}"
    )


def target(url: str, status: int = 200, seconds: float = 0.12) -> str:
    """A target that answered (record format of the network section)."""
    host = url.split("://", 1)[1].split("/", 1)[0]
    return f"url\t{url}\nhost\t{host}\ndns\t0\ncurl\t0\t{status} {seconds}"


def model_dir(path: str, *models: tuple[str, int, int], exists: bool = True) -> str:
    """A model dir in the models section's record format: (name, shards, missing) per model,
    each 10 GB per shard present."""
    if not exists:
        return f"dir\t{path}\t0"
    out = [f"dir\t{path}\t1"]
    for name, shards, missing in models:
        out += [f"model\t{name}\t{path}/{name}", "config\t1", "weights\t1"]
        out.append(f"size\t{(shards - missing) * 10_000_000_000 // 1024}")
        out.append("index\tmodel.safetensors.index.json")
        out += [
            f"missing\tmodel-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, missing + 1)
        ]
        out.append(f"shards\t{shards}\t{missing}")
    return "\n".join(out)


def df(path: str, free_gb: float, total_gb: float = 2000, mount: str = "/") -> str:
    kib = lambda gb: int(gb * 1e9 / 1024)  # noqa: E731
    used = kib(total_gb) - kib(free_gb)
    return f"fs\t{path}\t/dev/nvme0n1p1 {kib(total_gb)} {used} {kib(free_gb)} 40% {mount}"


H200_1X: dict[str, dict[str, PartSource]] = {
    "system": _sys_parts(),
    "gpus": {"query": H200 / "query_csv.txt", "smi": H200 / "smi.txt"},
    "topology": {
        "topo": H200 / "topo_m.txt",
        "nvlink": H200 / "nvlink_s.txt",
        "fabric": C / "fabric-h200-1x-derived.txt",
    },
    "toolkit": {
        "nvccs": "1\t/usr/local/cuda/bin/nvcc\t/usr/local/cuda-13.0/bin/nvcc",
        "nvcc.1": "/usr/local/cuda/bin/nvcc\t/usr/local/cuda-13.0/bin/nvcc\n"
        + (H200 / "nvcc.txt").read_text(),
        "cuda": "link\t/usr/local/cuda\t/usr/local/cuda-13.0\n"
        "link\t/usr/local/cuda-13\t/usr/local/cuda-13.0\ninstall\t/usr/local/cuda-13.0\nnvcc\t1",
        "driver": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  "
        "Release Build",
        "libs": "",
    },
    "env": {
        "pythons": "python\t/usr/bin/python3\t/usr/bin/python3.12\nversion\tPython 3.12.3",
        "pip": "",
        "tools": "tool\tuv\t/usr/local/bin/uv\ntool\tconda\t\ntool\tmamba\t\ntool\tmicromamba\t",
        "vars": "VIRTUAL_ENV=\nCONDA_PREFIX=\nCONDA_DEFAULT_ENV=",
        "venvs": C / "venvs-h200-1x-derived.txt",
    },
    "models": {
        "df": "",
        "dir.1": model_dir("/root/models", exists=False),
        "dir.2": model_dir("/root/.cache/huggingface/hub", exists=False),
    },
    "network": {"token": "none", "flags": "", "target.1": _net_target()},
    "health": {  # the real H200's own parts, as its probe saved them (h200-device/health/)
        p: DEVICE_HEALTH / f"health.{p}.txt"
        for p in ("pci", "klog", "smiq", "procs", "fm", "fmver", "rdma", "shm", "memlock")
    },
}

# Hosts assembled from other machines' GPU captures keep only the H200's host-wide health
# parts (kernel log, shm, memlock): its `nvidia-smi -q` and PCI bus describe another machine.
OTHER_HEALTH = {k: v for k, v in H200_1X["health"].items() if k not in ("smiq", "pci")}

DGX_H200: dict[str, dict[str, PartSource]] = {
    **H200_1X,
    "health": OTHER_HEALTH,
    "gpus": {
        "query": FIX / "saved" / "sources" / "query-h200-8x-derived.txt",
        "smi": H200 / "smi.txt",
    },
    "topology": {
        "topo": PUBLIC / "topo-h200-8x-nv18-12nic-tabs.txt",
        "nvlink": "",
        "fabric": C / "fabric-h200-8x-varied-completed.txt",
    },
}

PCIE_A40: dict[str, dict[str, PartSource]] = {
    **H200_1X,
    "health": OTHER_HEALTH,
    "gpus": {"smi": PUBLIC / "smi-a40-8x-525-err.txt"},
    "topology": {"topo": PUBLIC / "topo-rtx4090-8x-pcie-sys-tabs.txt", "nvlink": "", "fabric": ""},
}

A100_MIG: dict[str, dict[str, PartSource]] = {
    **H200_1X,
    "health": OTHER_HEALTH,
    "gpus": {"smi": PUBLIC / "smi-a100-80gb-570-mig.txt"},
}

BASES = {"h200-1x": H200_1X, "dgx-h200": DGX_H200, "pcie-a40": PCIE_A40, "a100-mig": A100_MIG}


def _part(name: str, source: PartSource) -> Part:
    text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
    return Part(name, 0, text)


def host(
    base: str = "h200-1x",
    name: str | None = None,
    **sections: Mapping[str, PartSource] | None,
) -> HostResult:
    """The base host with sections' parts laid over (a part given as None is dropped)."""
    layout = dict(BASES[base])
    results: dict[str, SectionResult] = {}
    for sec in SECTION_NAMES:
        parts = dict(layout.get(sec) or {})
        if sec in sections:
            over = sections[sec]
            if over is None:
                continue
            parts.update(over)
        built = {k: _part(k, v) for k, v in parts.items() if v is not None}
        data = section(sec).parse(built)
        results[sec] = SectionResult(sec, data, None, built, 0.1)
    return HostResult(name or base, HostState.READY, None, results, len(SECTION_NAMES), 1.0)


def failed(name: str, reason: str = "connection refused") -> HostResult:
    return HostResult(name, HostState.FAILED, reason)


def with_data(result: HostResult, section_name: str, **changes: object) -> HostResult:
    """`result` with one section's parsed data fields replaced (for values no capture has)."""
    sec = result.sections[section_name]
    data = dataclasses.replace(sec.data, **changes)
    sections = {**result.sections, section_name: dataclasses.replace(sec, data=data)}
    return dataclasses.replace(result, sections=sections)
