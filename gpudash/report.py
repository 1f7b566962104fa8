"""`gpudash report HOST`: one host's triage report, in Markdown to paste into a ticket, or JSON.

    render_markdown(result, findings) -> str
    render_json(result, findings)     -> dict

Every string that came from the host (GPU names, paths, tool messages) is untrusted: parsers
removed control characters, `md()` cleans it again (`gpudash.text.clean_line`: control, bidi
and zero-width characters shown, not acted on) and escapes what Markdown would act on (table pipes,
backticks, emphasis, links, HTML), so a hostile name can neither break a table nor inject
markup into the ticket.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpudash.checks.finding import Finding, Severity, counts, worst_severity
from gpudash.checks.fixes import fix_phrase
from gpudash.model import HostResult, to_jsonable
from gpudash.summary import human_bytes
from gpudash.text import clean, clean_line

if TYPE_CHECKING:
    from gpudash.probe.sections.env import Env
    from gpudash.probe.sections.gpus import Gpus
    from gpudash.probe.sections.health import Health
    from gpudash.probe.sections.models import Models
    from gpudash.probe.sections.network import Network
    from gpudash.probe.sections.system import System
    from gpudash.probe.sections.toolkit import Toolkit
    from gpudash.probe.sections.topology import Topology
    from gpudash.probe.sections.verify import VerifySection
    from gpudash.probe.topo import Topology as TopoMatrix

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def md(value: object) -> str:
    """Remote text as literal Markdown on one line: `?` for None."""
    if value is None:
        return "?"
    text = clean_line(str(value))
    return _MD_SPECIAL.sub(r"\\\1", text)


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table; header cells are ours, row cells are escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(md(c) if c != "" else " " for c in row) + " |")
    return lines


def _mib(mib: int | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.1f} GiB"


def _yes(flag: bool | None, yes: str = "on", no: str = "off") -> str:
    return "?" if flag is None else yes if flag else no


def render_json(result: HostResult, findings: Sequence[Finding]) -> dict[str, object]:
    """The report as one JSON document."""
    return {
        "host": result.name,
        "state": result.state.value,
        "error": result.error,
        "worst": (worst_severity(findings) or Severity.OK).value,
        "counts": {k.value: v for k, v in counts(findings).items()},
        "findings": [f.to_json() for f in findings],
        "sections": {k: to_jsonable(v.data) for k, v in result.sections.items()},
    }


def render_markdown(result: HostResult, findings: Sequence[Finding]) -> str:
    lines = [f"# Triage report: {md(result.name)}", ""]
    n = counts(findings)
    worst = worst_severity(findings) or Severity.OK
    summary = ", ".join(f"{n[s]} {s.value}" for s in reversed(Severity) if n[s])
    state = result.state.value + (f" ({md(result.error)})" if result.error else "")
    lines += [
        f"Probe: {state}. Verdict: **{worst.value.upper()}** ({summary or 'no findings'}).",
        "",
    ]
    lines += _findings(findings)
    # Any: each renderer takes its own section's dataclass; `SectionResult.data` is untyped.
    parts: tuple[tuple[str, Callable[[Any], list[str]]], ...] = (
        ("System", _system),
        ("GPUs", _gpus),
        ("Topology", _topology),
        ("Toolkit", _toolkit),
        ("Env", _env),
        ("Models", _models),
        ("Network", _network),
        ("Health", _health),
        ("Verify", _verify),
    )
    for title, part in parts:
        section = result.sections.get(title.lower())
        lines += [f"## {title}", ""]
        if section is None:
            lines += ["Not probed.", ""]
            continue
        if section.error:
            lines += [f"Section error: {md(section.error)}", ""]
        if section.data is not None:
            lines += part(section.data)
            lines.append("")
    # Last, over the whole text: whatever host or file text reached it by any path, no
    # control, bidi or zero-width character reaches the ticket or the terminal.
    return clean("\n".join(lines)).rstrip("\n") + "\n"


def _findings(findings: Sequence[Finding]) -> list[str]:
    lines = ["## Findings", ""]
    shown = [f for f in findings if f.severity is not Severity.OK]
    for f in shown:
        lines.append(f"- **{f.severity.value.upper()}** `{f.code}`: {md(f.title)}")
        if f.why:
            lines.append(f"  - Why: {md(f.why)}")
        if f.fix:
            task = fix_phrase(f.fix_task, f.fix_key, "markdown")
            lines.append(f"  - Fix: {md(f.fix)}{' ' + task if task else ''}")
        facts = _facts(f.facts)
        if facts:
            lines.append(f"  - Facts: {facts}")
    ok = [f for f in findings if f.severity is Severity.OK]
    if ok:
        lines.append("- Passed: " + "; ".join(f"`{f.code}` {md(f.title)}" for f in ok))
    if not findings:
        lines.append("No findings.")
    return [*lines, ""]


def _facts(facts: Mapping[str, object]) -> str:
    parts = []
    for key, value in dict(facts).items():
        if value in (None, [], {}, ""):
            continue
        if isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        parts.append(f"{md(key)} = {md(value)}")
    return "; ".join(parts)


def _system(s: System) -> list[str]:
    cpu = f"{s.cpu_model or '?'} ({s.cpus or '?'} CPUs)"
    uptime = f"{s.uptime_s / 86400:.1f} days" if s.uptime_s else None
    rows = [
        ("Hostname", s.hostname),
        ("OS", s.os),
        ("Kernel", s.kernel),
        ("Architecture", s.arch),
        ("CPU", cpu),
        ("Memory", human_bytes(s.memory_total_bytes) if s.memory_total_bytes else None),
        ("Uptime", uptime),
    ]
    return _table(["", ""], rows)


def _gpus(g: Gpus) -> list[str]:
    if g.missing:
        return [md(g.missing)]
    lines = [f"Driver {md(g.driver_version)}, CUDA {md(g.cuda_version)} (source: {md(g.source)})."]
    lines.append("")
    rows = []
    for gpu in g.gpus:
        rows.append(
            (
                gpu.index,
                ("ERR! " if gpu.error else "") + (gpu.name or "?"),
                f"{gpu.cc or '?'} {gpu.sm or ''}".strip(),
                f"{_mib(gpu.memory_used_mib)} / {_mib(gpu.memory_total_mib)}",
                "?" if gpu.temp_c is None else f"{gpu.temp_c} C",
                "?" if gpu.util_percent is None else f"{gpu.util_percent} %",
                _power(gpu.power_w, gpu.power_limit_w),
                _yes(gpu.persistence),
                gpu.mig_mode or "?",
                "?" if gpu.ecc_uncorrected is None else gpu.ecc_uncorrected,
                gpu.bus_id,
            )
        )
    header = ["GPU", "Name", "CC", "Memory used", "Temp", "Util", "Power", "Persist.", "MIG"]
    lines += _table([*header, "ECC unc.", "Bus"], rows)
    if g.processes:
        lines += ["", "Processes:", ""]
        procs = [(p.gpu, p.pid, p.type, p.name, p.memory_mib) for p in g.processes]
        lines += _table(["GPU", "PID", "Type", "Name", "MiB"], procs)
    return lines


def _power(w: float | None, cap: float | None) -> str:
    if w is None and cap is None:
        return "?"
    return f"{'?' if w is None else f'{w:.0f}'} / {'?' if cap is None else f'{cap:.0f}'} W"


def _topology(t: Topology) -> list[str]:
    if t.missing:
        return [md(t.missing)]
    lines = [f"{md(t.summary)}."]
    m = t.matrix
    if m is not None and m.gpus:
        lines.append("")
        extra = [c for c in ("CPU Affinity", "NUMA Affinity") if _has(m, c)]
        rows = []
        for a in m.gpus:
            row = [a, *("X" if a == b else (m.link(a, b) or "?") for b in m.gpus)]
            if "CPU Affinity" in extra:
                row.append(m.cpu_affinity.get(a, ""))
            if "NUMA Affinity" in extra:
                row.append(m.numa_affinity.get(a, ""))
            rows.append(row)
        lines += _table(["", *(md(g) for g in m.gpus), *extra], rows)
        if m.nics:
            nearest = [(a, ", ".join(m.nearest_nics(a)) or "?") for a in m.gpus]
            lines += ["", "Nearest NICs:", ""]
            named = {k: v for k, v in m.nic_names.items()}
            lines += _table(["GPU", "NIC"], [(a, _nic(n, named)) for a, n in nearest])
    if t.inactive_links:
        lines += ["", f"Inactive NVLinks: {t.inactive_links}."]
    states = [s for s in t.fabric_states if s != "N/A"]
    if states:
        lines += ["", f"Fabric state: {md(', '.join(t.fabric_states))}."]
    return lines


def _nic(names: str, legend: dict[str, str]) -> str:
    return ", ".join(f"{n} ({legend[n]})" if n in legend else n for n in names.split(", "))


def _has(m: TopoMatrix, column: str) -> bool:
    return bool(m.cpu_affinity if column == "CPU Affinity" else m.numa_affinity)


def _toolkit(k: Toolkit) -> list[str]:
    lines = []
    if k.nvcc:
        rows: list[Sequence[object]] = [
            (n.path, n.version or n.release or n.error, ", ".join(n.aliases)) for n in k.nvcc
        ]
        lines += _table(["nvcc (first wins on PATH)", "Version", "Also as"], rows)
    else:
        lines.append("No nvcc found.")
    if k.cuda_installs:
        lines.append("")
        rows = [
            (i.path, i.version, "yes" if i.has_nvcc else "no", ", ".join(i.aliases))
            for i in k.cuda_installs
        ]
        lines += _table(["CUDA install", "Version", "nvcc", "Links"], rows)
    lines.append("")
    lines.append(
        f"/usr/local/cuda -> {md(k.cuda_symlink or 'not a link')}; kernel module driver "
        f"{md(k.driver_version)}."
    )
    libs = [*k.nccl, *k.cudnn]
    if libs:
        lines.append("")
        lines += _table(
            ["Library", "Version", "From", "Path"],
            [(lib.name, lib.version, lib.source, lib.path) for lib in libs],
        )
    return lines


_SHOWN_PACKAGES = ("sglang", "vllm", "flashinfer-python", "transformers", "triton")


def _env(e: Env) -> list[str]:
    lines = []
    if e.pythons:
        rows: list[Sequence[object]] = [(p.path, p.version or p.error, p.pip) for p in e.pythons]
        lines += _table(["Python", "Version", "pip"], rows)
    else:
        lines.append("No python on PATH.")
    lines.append("")
    uv = f"uv {md(e.uv.version)} at {md(e.uv.path)}" if e.uv else "no uv"
    conda = ", ".join(f"{md(t.name)} {md(t.version)}" for t in e.conda)
    lines.append(f"{uv}{'; ' + conda if conda else ''}.")
    lines.append("")
    if e.venvs:
        rows = []
        for v in e.venvs:
            others = ", ".join(f"{p} {v.packages[p]}" for p in _SHOWN_PACKAGES if p in v.packages)
            rows.append(
                (
                    v.path,
                    v.kind,
                    v.python,
                    v.packages.get("torch", "none"),
                    v.torch_cuda or "",
                    others,
                )
            )
        lines += _table(["Venv", "Kind", "Python", "torch", "torch CUDA", "Serving stack"], rows)
    else:
        lines.append("No venvs found.")
    return lines


def _models(m: Models) -> list[str]:
    lines = []
    rows: list[Sequence[object]] = []
    for d in m.dirs:
        if not d.exists:
            rows.append((d.path, "(no such dir)", "", "", ""))
        for model in d.models:
            missing = (
                f"{model.missing_count} of {model.shards} shards" if model.missing_count else ""
            )
            rows.append(
                (
                    d.path,
                    model.name,
                    human_bytes(model.size_bytes),
                    "yes" if model.complete else "NO",
                    missing,
                )
            )
    if rows:
        lines += _table(["Dir", "Model", "Size", "Complete", "Missing"], rows)
    else:
        lines.append("No model dirs probed.")
    if m.filesystems:
        lines.append("")
        rows = [
            (fs.path, fs.mount, human_bytes(fs.free_bytes), human_bytes(fs.total_bytes))
            for fs in m.filesystems
        ]
        lines += _table(["Path", "Mount", "Free", "Size"], rows)
    return lines


def _network(n: Network) -> list[str]:
    lines = []
    if n.targets:
        rows = []
        for t in n.targets:
            dns = "?" if t.dns_ok is None else "ok" if t.dns_ok else "failed"
            latency = "" if t.latency_ms is None else f"{t.latency_ms:.0f} ms"
            rows.append((t.url, dns, t.http_status or "", latency, "ok" if t.ok else t.error))
        lines += _table(["Target", "DNS", "HTTP", "Latency", "Result"], rows)
    else:
        lines.append("No network targets probed.")
    lines.append("")
    token = f"present ({md(n.hf_token_source)})" if n.hf_token else "none"
    extra = "; HF_HUB_OFFLINE set" if n.hf_offline else ""
    proxies = f"; proxy variables: {md(', '.join(n.proxies))}" if n.proxies else ""
    lines.append(f"HF token: {token}{extra}{proxies}.")
    return lines


def _health(h: Health) -> list[str]:
    """What the health section read, per GPU and for the host (the verdicts are above)."""
    from gpudash.probe.sections.health import summary

    lines = []
    if h.gpus:
        rows = []
        for i, g in enumerate(h.gpus):
            link = f"gen{g.pcie_gen or '?'}/{g.pcie_gen_max or '?'} x{g.pcie_width or '?'}"
            link += f"/{g.pcie_width_max or '?'}"
            xids = sorted({e.xid for e in h.kernel.xids if e.bus == g.key})
            rows.append(
                (
                    i,
                    g.key or g.bus_id,
                    ", ".join(g.reasons) if g.reasons_read else "?",
                    link,
                    _yes(g.remap_pending, "yes", "no") if g.remap_pending is not None else "?",
                    "?" if g.ecc_uncorrected_volatile is None else g.ecc_uncorrected_volatile,
                    ", ".join(map(str, xids)) or "none",
                )
            )
        lines += _table(
            ["#", "Bus", "Clock reasons", "PCIe", "Remap pending", "Uncorr. ECC", "Xid"], rows
        )
        lines.append("")
    lines.append(md(summary(h)) + ".")
    return lines


def _verify(v: VerifySection) -> list[str]:
    """What the verify task measured on the GPUs (proven, not inferred), with its age."""
    from gpudash.probe.sections.verify import age_text

    r = v.result
    if not v.looked:
        return ["Not looked for by this probe."]
    if r is None:
        return [
            "Not run on this host (`gpudash run verify HOST` runs it; b then V in the dashboard)."
        ]
    age = v.age_s()
    when = f", {age_text(age)} ago" if age is not None else ""
    lines = [
        f"Status **{r.status}**{when}; torch {md(r.torch.version or '?')} "
        f"(CUDA {md(r.torch.cuda or '?')}), driver {md(r.driver or '?')}, "
        f"python `{md(r.executable or '?')}`.",
        "",
    ]
    if r.refused:
        lines += [f"Refused: {md(r.refused)}", ""]
    if r.gpus:
        rows = [
            (
                g.index,
                md(g.name or "?"),
                md(g.arch or "?"),
                _rate(g.matmul_tflops),
                _rate(g.copy_gbps),
                f"{_rate(g.h2d_gbps, 1)} / {_rate(g.d2h_gbps, 1)}",
                md(g.error or ("wrong results" if g.matmul_ok is False else "ok")),
            )
            for g in r.gpus
        ]
        header = ("GPU", "name", "arch", "bf16 TFLOP/s", "copy GB/s", "H2D / D2H GB/s", "status")
        lines += _table(header, rows)
    n = r.nccl
    if n is not None and (n.world or 0) >= 2:
        what = md(n.error) if n.error else f"busbw {_rate(n.busbw_gbps)} GB/s"
        lines += ["", f"All-reduce over {n.world} GPUs ({(n.bytes or 0) >> 20} MiB bf16): {what}."]
    for e in r.engines:
        state = "ok" if e.ok else f"failed: {md(e.error or '?')}"
        lines.append(f"- {md(e.name)} {md(e.version or '')}: {state}")
    lines += [f"- {md(f)}" for f in r.failures]
    return lines


def _rate(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
