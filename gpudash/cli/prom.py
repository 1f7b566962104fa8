"""`gpudash check --format prom`: the findings as Prometheus text exposition, for
node_exporter's textfile collector (`--output DIR/gpudash.prom`, written atomically).

The format is Prometheus' text format 0.0.4, as
https://prometheus.io/docs/instrumenting/exposition_formats/ (read 2026-12) specifies it:
- one `# HELP` and one `# TYPE` line per metric family, before its samples, and all of a
  family's samples in one block (the textfile collector rejects a file that repeats one);
- metric names `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names `[a-zA-Z_][a-zA-Z0-9_]*`;
- label values in double quotes with backslash, double quote and line feed escaped as `\\\\`,
  `\\"` and `\\n`; HELP text with backslash and line feed escaped;
- `\\n` line endings, the last line ending in one too.

Label values here include remote text (GPU names, UUIDs, driver versions as the host printed
them): they are cleaned of control characters (gpudash.text.clean_line) and then escaped,
so a hostile host can neither end a sample line nor hide a terminal escape in a dashboard.
Values are gauges: each run states the fleet as it is now.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpudash.checks.finding import Finding, Severity, worst_severity
from gpudash.model import HostResult, HostState
from gpudash.text import clean_line

Labels = Mapping[str, str]
Sample = tuple[Labels, float]


def escape_label_value(value: str) -> str:
    """A label value as the text format needs it inside its double quotes."""
    text = clean_line(value)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(int(value)) if float(value).is_integer() else repr(float(value))


def _family(name: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    lines = [f"# HELP {name} {_escape_help(help_text)}", f"# TYPE {name} gauge"]
    for labels, value in samples:
        body = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{body}}} {_number(value)}" if body else f"{name} {_number(value)}")
    return lines


def render_prom(
    found: Mapping[str, Sequence[Finding]],
    results: Mapping[str, HostResult],
    *,
    generated_at: float,
) -> str:
    """The exposition text of `found` (each host's findings) and the hosts' GPU facts."""
    hosts = list(found)
    families: list[list[str]] = []

    def add(name: str, help_text: str, samples: Iterable[Sample]) -> None:
        families.append(_family(name, help_text, list(samples)))

    def result(host: str) -> HostResult:
        return results.get(host) or HostResult(host)

    add(
        "gpudash_host_up",
        "1 when the host answered the probe, 0 when it did not.",
        (({"host": h}, float(result(h).state is HostState.READY)) for h in hosts),
    )
    add(
        "gpudash_findings",
        "Findings of the host by severity (ok, info, warn, fail).",
        (
            ({"host": h, "severity": s.value}, float(sum(f.severity is s for f in found[h])))
            for h in hosts
            for s in Severity
        ),
    )
    add(
        "gpudash_worst_severity",
        "The host's worst finding: 0 ok, 1 info, 2 warn, 3 fail.",
        (({"host": h}, float((worst_severity(found[h]) or Severity.OK).rank)) for h in hosts),
    )
    # By code and severity only: a title carries probed details (a curl timing) that would
    # make a new series on every run; two findings of one code on a host count together.
    coded: dict[tuple[str, str, str], int] = {}
    for h in hosts:
        for f in found[h]:
            if f.severity.rank >= Severity.WARN.rank:
                key = (h, f.code, f.severity.value)
                coded[key] = coded.get(key, 0) + 1
    add(
        "gpudash_finding",
        "Warn and fail findings of the host by stable code (for alert rules).",
        (({"host": h, "code": c, "severity": s}, float(n)) for (h, c, s), n in coded.items()),
    )
    gpus = {h: _gpus(result(h)) for h in hosts}
    add(
        "gpudash_gpus",
        "GPUs the host reports (absent when the GPU section did not answer).",
        (({"host": h}, float(len(g["gpus"]))) for h, g in gpus.items() if g is not None),
    )
    add(
        "gpudash_gpu_info",
        "1 per GPU, its facts as labels: model name, compute capability, driver and CUDA.",
        (
            (
                {
                    "host": h,
                    "gpu": str(gpu.index),
                    "name": gpu.name or "",
                    "uuid": gpu.uuid or "",
                    "cc": gpu.cc or "",
                    "driver": g["driver"],
                    "cuda": g["cuda"],
                },
                1.0,
            )
            for h, g in gpus.items()
            if g is not None
            for gpu in g["gpus"]
        ),
    )
    add(
        "gpudash_gpu_memory_total_bytes",
        "Memory of each GPU, in bytes.",
        (
            ({"host": h, "gpu": str(gpu.index)}, float(gpu.memory_total_mib) * 1024 * 1024)
            for h, g in gpus.items()
            if g is not None
            for gpu in g["gpus"]
            if gpu.memory_total_mib is not None
        ),
    )
    add(
        "gpudash_gpu_error",
        "1 for a GPU nvidia-smi cannot read (ERR!), 0 otherwise.",
        (
            ({"host": h, "gpu": str(gpu.index)}, float(bool(gpu.error)))
            for h, g in gpus.items()
            if g is not None
            for gpu in g["gpus"]
        ),
    )
    add(
        "gpudash_check_timestamp_seconds",
        "When gpudash check wrote this, in seconds since the epoch.",
        [({}, generated_at)],
    )
    return "".join(line + "\n" for family in families for line in family)


def _gpus(result: HostResult) -> dict[str, Any] | None:
    data = result.data("gpus")
    if data is None or not hasattr(data, "gpus"):
        return None
    return {
        "gpus": tuple(data.gpus),
        "driver": getattr(data, "driver_version", None) or "",
        "cuda": getattr(data, "cuda_version", None) or "",
    }
