"""`gpudash parse KIND [FILE]`: one saved tool output, parsed, printed as JSON (no host).

    gpudash parse KIND [FILE|-] [--fields A,B] [--text]
        exit 0 when FILE is that tool's output, 1 when nothing of it is found in FILE
        ("no nvidia-smi table found"), 2 for usage errors (unreadable file, unknown KIND)

The parsers are total (any text gives a result), so a file of the wrong tool parses to an
empty result; printing `{"gpus": []}` for it would read as "a machine with no GPUs". The
recognised-or-not test below turns that into one line and exit 1 instead.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpudash.cli.errors import ExitCode, UsageError
from gpudash.probe import TOOL_KINDS

_QUERY_FIELD = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*(?: \[[^\]]{1,16}\])?")
"""A `--query-gpu` column as nvidia-smi heads it ("memory.total [MiB]"): a CSV whose header
is anything else (any text file's line) is not that tool's output."""

# What each kind is called in the "not found" line, and the test that its output is there:
# a parse that found no row of the tool's own shape found nothing.
_FOUND: dict[str, tuple[str, Callable[[dict[str, Any]], bool]]] = {
    "topo": ("no `nvidia-smi topo -m` matrix found", lambda d: bool(d.get("gpus"))),
    "smi": ("no nvidia-smi table found", lambda d: bool(d.get("gpus"))),
    "query": (
        "no `nvidia-smi --query-gpu` CSV found (a noheader one needs --fields)",
        lambda d: bool(d.get("rows")) and all(_QUERY_FIELD.fullmatch(h) for h in d["header"]),
    ),
    "nvlink": ("no `nvidia-smi nvlink --status` output found", lambda d: bool(d.get("gpus"))),
    "nvcc": ("no `nvcc --version` output found", lambda d: bool(d.get("release"))),
    "p2p": ("no `nvidia-smi topo -p2p` matrix found", lambda d: bool(d.get("status"))),
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parse = sub.add_parser("parse", help="parse one saved tool output and print JSON")
    parse.add_argument("kind", choices=TOOL_KINDS, help="which tool printed it")
    parse.add_argument("file", nargs="?", default="-", help="the file, or - for stdin")
    parse.add_argument("--fields", help="column names of a --format=csv,noheader query")
    parse.add_argument("--text", action="store_true", help="a readable summary, not JSON")
    parse.set_defaults(handler=parse_command)


def parse_command(args: argparse.Namespace) -> ExitCode:
    from gpudash.cli.document import envelope
    from gpudash.probe.p2p import looks_like_p2p
    from gpudash.probe.tools import parse_tool

    if args.file == "-":
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    else:
        try:
            text = Path(args.file).read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"{args.file}: {exc.strerror or exc}") from None
    fields = [f.strip() for f in args.fields.split(",")] if args.fields else None
    data = parse_tool(args.kind, text, fields)
    missing, found = _FOUND[args.kind]
    where = "stdin" if args.file == "-" else args.file
    if args.kind in ("topo", "nvlink") and looks_like_p2p(text):
        # Its matrix has the shape of `topo -m`; read as one it would be taken for links.
        print(
            f"gpudash: {where}: this is `nvidia-smi topo -p2p` output; "
            f"read it with `gpudash parse p2p {args.file}`",
            file=sys.stderr,
        )
        return ExitCode.FAILED
    if not found(data):
        print(f"gpudash: {where}: {missing}", file=sys.stderr)
        return ExitCode.FAILED
    if args.text:
        sys.stdout.write("".join(f"{line}\n" for line in summary_lines(args.kind, data)))
    else:
        print(json.dumps(envelope({"kind": args.kind, **data}), indent=2))
    return ExitCode.OK


def summary_lines(kind: str, data: dict[str, Any]) -> list[str]:
    """A few readable lines of a parsed tool output (`--text`): what a person looks for."""
    if kind == "smi":
        gpus = data["gpus"]
        lines = [
            f"driver {data.get('driver_version') or '?'}, CUDA {data.get('cuda_version') or '?'}"
            f", {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}"
        ]
        for g in gpus:
            mem = (
                f"{g['memory_used_mib']}/{g['memory_total_mib']} MiB"
                if g.get("memory_total_mib") is not None
                else "memory ?"
            )
            extra = "  ERR!" if g.get("error") else ""
            lines.append(
                f"  GPU {g['index']}: {g.get('name') or '?'}  {mem}  "
                f"{_opt(g.get('temp_c'), 'C')}  {_opt(g.get('util_percent'), '%')}{extra}"
            )
        procs = data.get("processes") or []
        if procs:
            lines.append(f"{len(procs)} process{'es' if len(procs) != 1 else ''} on the GPUs")
        return lines
    if kind == "query":
        rows = data["rows"]
        lines = [
            f"{len(rows)} row{'s' if len(rows) != 1 else ''}, columns: " + ", ".join(data["header"])
        ]
        for row in rows:
            lines.append("  " + ", ".join(f"{k}={v}" for k, v in row.items()))
        return lines
    if kind == "topo":
        gpus = data["gpus"]
        if data.get("all_nvlink"):
            links = f"every GPU pair on NVLink (at least NV{data.get('min_nvlink')})"
        elif len(gpus) < 2:
            links = "single GPU: no GPU pairs"
        else:
            kinds = sorted(
                {
                    v
                    for g in gpus
                    for k, v in data["links"].get(g, {}).items()
                    if k in gpus and k != g
                }
            )
            links = "GPU pairs over " + ", ".join(kinds)
        lines = [f"{len(gpus)} GPUs, {len(data.get('nics') or [])} NICs; {links}"]
        for g in gpus:
            cpu = data.get("cpu_affinity", {}).get(g) or "?"
            numa = data.get("numa_affinity", {}).get(g) or "?"
            lines.append(f"  {g}: CPUs {cpu}, NUMA {numa}")
        return lines
    if kind == "nvlink":
        lines = []
        for g in data["gpus"]:
            active = [link for link in g["links"] if link.get("active")]
            speeds = sorted({link["speed_gbps"] for link in active if link.get("speed_gbps")})
            rate = f" at {', '.join(f'{s:g}' for s in speeds)} GB/s" if speeds else ""
            count = f"{len(active)} of {len(g['links'])} links active"
            lines.append(f"GPU {g['index']}: {g.get('name') or '?'}: {count}{rate}")
        return lines
    if kind == "p2p":
        gpus = data["gpus"]
        verdict = (
            "every pair OK"
            if data.get("all_ok")
            else f"{len(data['blocked'])} pair(s) not OK"
            if data.get("blocked")
            else "no pair to check"
        )
        return [f"{len(gpus)} GPUs; peer-to-peer: {verdict}", *(f"  {b}" for b in data["blocked"])]
    # nvcc
    return [f"nvcc {data.get('version') or data.get('release')} (CUDA {data.get('release')})"]


def _opt(value: object, unit: str) -> str:
    return "?" + unit if value is None else f"{value}{unit}"
