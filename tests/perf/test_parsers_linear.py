"""Every parser is linear in its input (issue 20, item 2): a host printing pathological output
slows only its own parse, by a factor of its size, never by its square or cube.

Each parser gets inputs of 1, 2, 4 and 8 MB built from the shapes that made the old parsers
super-linear (long runs of one character, many columns, many rows, no newlines, and the
issue's own examples); the CPU time (`time.process_time`, min of a few runs) must about double
from one size to the next. A 64 KB run goes first: a parser that is already slow there fails
at once instead of running for minutes. (tests/perf: pure but heavy, about a minute.)
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest

from gpudash.probe.arch import cc_from_name
from gpudash.probe.nvcc import parse_nvcc
from gpudash.probe.nvlink import parse_nvlink
from gpudash.probe.p2p import parse_p2p
from gpudash.probe.parts import Part, split_parts
from gpudash.probe.query import parse_query
from gpudash.probe.registry import SECTION_NAMES, section
from gpudash.probe.smi import parse_smi
from gpudash.probe.stream import FrameReader
from gpudash.probe.topo import parse_topo
from gpudash.tasks.logs import LineAssembler

MB = 1 << 20
SIZES = (1 * MB, 2 * MB, 4 * MB, 8 * MB)
MAX_RATIO = 3.5  # 2 expected, 4 for a quadratic parser; noise on a shared 2-core machine
NOISE_S = 0.02  # below this, a ratio is noise (allocator and cache effects), not judged
NONCE = "0123456789abcdef"

# Every part name each section's parser reads (numbered ones once).
PARTS = {
    "system": ("hostname", "os", "kernel", "arch", "cpu", "ncpu", "meminfo", "uptime"),
    "gpus": ("query", "smi"),
    "topology": ("topo", "nvlink", "fabric"),
    "toolkit": ("nvccs", "nvcc.0", "cuda", "driver", "libs"),
    "env": ("pythons", "pip", "tools", "vars", "venvs"),
    "models": ("df", "dir.0"),
    "network": ("token", "flags", "target.0"),
    "health": ("pci", "klog", "smiq", "procs", "fm", "fmver", "rdma", "shm", "memlock"),
    "verify": ("result", "clock"),
    "serve": ("state.1", "files", "clock"),
}


def _repeat(line: str, size: int) -> str:
    return line * max(1, size // len(line))


# name -> size -> text. Lines from the issue: nvlink's `GPU 0: x<3000 spaces>y` (cubic), runs
# of spaces in smi/query/nvlink rows, the topology State line, df lines, a 9000-column topo
# header, 200k lines of `GPU is lost`.
SHAPES: dict[str, Callable[[int], str]] = {
    "spaces": lambda n: " " * n,
    "letters": lambda n: "x" * n,
    "digits": lambda n: "9" * n,
    "tabs": lambda n: "\t" * n,
    "colons": lambda n: ":" * n,
    "pipes": lambda n: "|" * n,
    "rows": lambda n: _repeat("a, b, 1\n", n),
    "columns": lambda n: _repeat("0, ", n),
    "nvlink_gpu": lambda n: _repeat("GPU 0: x" + " " * 3000 + "y\n", n),
    "nvlink_link": lambda n: _repeat("\t Link 0:" + " " * 3000 + "26.562 GB/s x\n", n),
    "smi_row": lambda n: "| 0  NVIDIA H200" + " " * n + "x |\n",
    "smi_proc": lambda n: "|    0   N/A  N/A   1234  C   python" + " " * n + "x |\n",
    "query_row": lambda n: "index, name\n0, 78.73" + " " * n + "x\n",
    "state": lambda n: "\tState:" + " " * n + "x\n",
    "df": lambda n: "fs\t/\t/dev/sda1" + " " * n + "1 2 3 x% /\n",
    "topo_header": lambda n: "\t" + "\t".join(f"GPU{i}" for i in range(n // 6)) + "\n",
    "gpu_lost": lambda n: _repeat("GPU is lost\n", n),
    "p2p_rows": lambda n: " GPU0\tGPU1\n" + _repeat(" GPU0\tX\tOK\t" + "OK\t" * 500 + "\n", n),
    "nvcc_run": lambda n: "nvcc" * (n // 4),
    "markers": lambda n: _repeat(f"@@gpudash:{NONCE}:part:x\n", n),
}
GENERIC = ("spaces", "letters", "rows", "columns")
"""Every parser gets these (a run of one character without newlines, many rows, many
columns) and the shapes aimed at it below; bench/bench_parsers.py runs every shape on every
parser."""
AIMED = {
    "section.system": ("digits", "colons"),
    "section.gpus": ("smi_row", "smi_proc", "query_row", "gpu_lost", "digits"),
    "section.topology": ("nvlink_gpu", "nvlink_link", "state", "topo_header"),
    "section.toolkit": ("nvcc_run", "digits"),
    "section.env": ("tabs", "colons"),
    "section.models": ("df", "tabs"),
    "section.network": ("tabs", "digits"),
    "section.health": ("gpu_lost", "colons", "digits"),
    "section.verify": ("colons", "digits"),
    "section.serve": ("colons", "digits"),
    "smi": ("smi_row", "smi_proc", "gpu_lost", "pipes", "digits"),
    "query": ("query_row", "digits"),
    "nvlink": ("nvlink_gpu", "nvlink_link"),
    "topo": ("topo_header", "tabs"),
    "p2p": ("topo_header", "tabs", "p2p_rows"),
    "nvcc": ("nvcc_run",),
    "arch": ("pipes",),
    "parts": ("markers",),
    "frames": ("markers",),
    "task_log": (),
}


def _section(name: str) -> Callable[[str], Any]:
    parse = section(name).parse
    return lambda text: parse({p: Part(p, 0, text) for p in PARTS[name]})


def _frames(text: str) -> Any:
    reader = FrameReader(NONCE)
    data = f"@@gpudash:{NONCE}:begin:gpus\n{text}".encode()
    for at in range(0, len(data), 1 << 16):  # as a host's stream arrives: 64 KiB reads
        reader.feed(data[at : at + (1 << 16)])
    return reader.finish()


def _task_log(text: str) -> Any:
    """The task log reader, fed 64 KiB chunks and asked for the partial line after each,
    as the follower does: one 8 MB line without a newline must stay linear."""
    assembler = LineAssembler()
    data = text.replace("\n", "").encode()
    for at in range(0, len(data), 1 << 16):
        assembler.feed(data[at : at + (1 << 16)])
        _ = assembler.partial
    return assembler.feed(b"", final=True)


PARSERS: dict[str, Callable[[str], Any]] = {
    **{f"section.{name}": _section(name) for name in SECTION_NAMES},
    "smi": parse_smi,
    "query": parse_query,
    "nvlink": parse_nvlink,
    "topo": parse_topo,
    "p2p": parse_p2p,
    "nvcc": parse_nvcc,
    "arch": cc_from_name,
    "parts": lambda text: split_parts(text, NONCE),
    "frames": _frames,
    "task_log": _task_log,
}


def cpu_time(parse: Callable[[str], Any], text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        parse(text)
        best = min(best, time.process_time() - start)
    return best


def growth(parse: Callable[[str], Any], shape: Callable[[int], str], runs: int) -> list[float]:
    """CPU seconds at each of SIZES (after a quick 64 KB check that fails fast)."""
    small = cpu_time(parse, shape(64 << 10), 1)
    assert small < 0.5, f"{small:.2f}s for 64 KB: super-linear"
    return [cpu_time(parse, shape(size), runs) for size in SIZES]


def _linear(times: list[float]) -> bool:
    """Each doubling of the input at most ~doubles the CPU time. No absolute bound in seconds:
    how fast a parser is, is the benches' to say as a ratio in one run (bench.bench_parsers);
    a fixed 0.5 s/MB failed here on the old code too once the machine ran slower."""
    ratios = [b / a for a, b in itertools.pairwise(times) if b > NOISE_S and a > 0]
    return all(r <= MAX_RATIO for r in ratios)


@pytest.mark.parametrize("parser", list(PARSERS))
def test_every_parser_is_linear_in_pathological_input(parser: str) -> None:
    parse = PARSERS[parser]
    bad = []
    for shape_name in (*GENERIC, *AIMED[parser]):
        times = growth(parse, SHAPES[shape_name], 1)
        if not _linear(times):  # noise or not: the min of 3 runs decides
            times = growth(parse, SHAPES[shape_name], 3)
        if not _linear(times):
            bad.append(f"{shape_name}: " + ", ".join(f"{t * 1000:.0f}ms" for t in times))
    assert not bad, f"{parser} is not linear in: " + "; ".join(bad)
