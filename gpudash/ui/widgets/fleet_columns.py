"""The fleet view's columns: one short cell per host per key fact, and a sort key for each.

Pure functions of a `HostResult`, so the view only lays them out. A cell is `None` when the
host has not reported that fact (it sorts last and never counts as "different"). A column
that reads one section only names it (`section`): its value changes only when a snapshot
brings a new result of that section, which is what lets `FleetRows` keep values per host.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.text import Text

from gpudash.model import HostResult
from gpudash.probe.sections.env import Env
from gpudash.probe.sections.gpus import Gpus
from gpudash.probe.sections.health import Health
from gpudash.probe.sections.models import Models
from gpudash.probe.sections.network import Network
from gpudash.probe.sections.serve import Serve
from gpudash.probe.sections.system import System
from gpudash.probe.sections.toolkit import Toolkit
from gpudash.probe.sections.topology import Topology
from gpudash.probe.sections.verify import VerifySection
from gpudash.ui.host_state import short_gpu_name, state_text, state_words
from gpudash.ui.render import remote


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    value: Callable[[HostResult], str | None]
    compare: bool = True  # highlight hosts that differ from the most common value
    section: str | None = None  # the one section `value` reads; None: any part of the host
    floor: int | None = None
    """The narrowest this column is cut to when the row is wider than the screen (cells
    end in "…"); None: never cut. Identity and short values keep their width."""
    gives_first: bool = False  # cut before the others: free text, read in full elsewhere
    extra: bool = False
    """Shown only where the screen has room for it after every other column at full width:
    a wide terminal gets more facts side by side instead of the same ten, padded."""
    style: Callable[[str], str] | None = None
    """The style of a value (a verdict's colour), where it is not highlighted as odd."""


def _state(host: HostResult) -> str:
    return state_words(host, compact=True)


def _gpus(host: HostResult) -> str | None:
    data = host.data("gpus", Gpus)
    if data is None:
        return None
    if data.missing:
        return "none"
    names = Counter(short_gpu_name(g.name) for g in data.gpus)
    return ", ".join(f"{n}× {name}" for name, n in names.items()) or "none"


def _cc(host: HostResult) -> str | None:
    data = host.data("gpus", Gpus)
    if data is None or not data.gpus:
        return None
    return ",".join(dict.fromkeys(g.sm or g.cc or "?" for g in data.gpus))


def _nvlink(host: HostResult) -> str | None:
    data = host.data("topology", Topology)
    return None if data is None else data.brief


def _driver(host: HostResult) -> str | None:
    data = host.data("gpus", Gpus)
    if data is None or data.missing:
        return None
    return f"{data.driver_version or '?'}/{data.cuda_version or '?'}"


def _gpu_mem(host: HostResult) -> str | None:
    data = host.data("gpus", Gpus)
    if data is None or not data.gpus:
        return None
    sizes = dict.fromkeys(
        f"{round(g.memory_total_mib / 1024)} GiB" if g.memory_total_mib else "?" for g in data.gpus
    )
    return ",".join(sizes)


def _system(*names: str) -> Callable[[HostResult], str | None]:
    def value(host: HostResult) -> str | None:
        data = host.data("system", System)
        if data is None:
            return None
        for name in names:
            found = getattr(data, name, None)
            if found not in (None, ""):
                if name == "memory_total_bytes":
                    return f"{found / 2**30:.0f} GiB"
                return str(found)
        return None

    return value


def _nvcc(host: HostResult) -> str | None:
    data = host.data("toolkit", Toolkit)
    if data is None:
        return None
    versions = dict.fromkeys(n.version or n.release or "?" for n in data.nvcc)
    return ",".join(versions) or "none"


def _torch(host: HostResult) -> str | None:
    data = host.data("env", Env)
    if data is None:
        return None
    found = dict.fromkeys(
        v.packages["torch"]
        + (f"+cu{v.torch_cuda}" if v.torch_cuda and "+" not in v.packages["torch"] else "")
        for v in data.venvs
        if "torch" in v.packages
    )
    return ",".join(found) or "none"


def _models(host: HostResult) -> str | None:
    data = host.data("models", Models)
    if data is None:
        return None
    models = [m for d in data.dirs for m in d.models]
    broken = sum(not m.complete for m in models)
    return f"{len(models)}" + (f" ({broken} incomplete)" if broken else "")


def _network(host: HostResult) -> str | None:
    data = host.data("network", Network)
    if data is None:
        return None
    ok = sum(t.ok for t in data.targets)
    return f"{ok}/{len(data.targets)} ok" + (" · HF token" if data.hf_token else "")


def _health(host: HostResult) -> str | None:
    """The worst of what the health section read, in a word or two: lost GPUs, Xids, clock
    slowdowns, the fabric manager; "ok" when it read GPUs or a kernel log and saw none
    (the Findings panel has the verdict in full)."""
    data = host.data("health", Health)
    if data is None:
        return None
    from gpudash.probe.smiq import SLOWDOWN_REASONS

    lost = len(set(data.lost_gpus) | set(data.unreachable))
    bits = [f"{lost} lost"] if lost else []
    xids = sorted({e.xid for e in data.kernel.xids})
    if xids:
        bits.append("Xid " + ",".join(map(str, xids[:3])))
    slow = sum(any(r in SLOWDOWN_REASONS for r in g.reasons) for g in data.gpus)
    if slow:
        bits.append(f"{slow} slowed")
    fm = data.fabric_manager
    if fm is not None and fm.active not in (None, "active"):
        bits.append(f"FM {fm.active}")
    if bits:
        return " · ".join(bits)
    return "ok" if data.gpus or data.kernel.source else "?"


def _verify(host: HostResult) -> str | None:
    """The verify task's last result in a word: "FAIL" where it or its findings fail,
    "stale" where the driver or torch changed since, "refused", "?" (unreadable), else "ok"
    (or "warn": a finding such as a slow GPU) with the median bf16 TFLOP/s of its GPUs;
    "not run" where the probe looked and found none. The verdicts are the checks' (the host's
    findings, gpudash/checks/verify.py), so the column never says ok where they do not."""
    data = host.data("verify", VerifySection)
    if data is None or not data.looked:
        return None
    result = data.result
    if result is None:
        return "not run"
    found = {f.code: f.severity.name for f in host.findings if f.code.startswith("verify.")}
    if result.status == "fail" or "FAIL" in found.values():
        return "FAIL"
    if "verify.stale" in found:
        return "stale"
    if result.status in ("refused", "unknown"):
        return "refused" if result.status == "refused" else "?"
    speeds = sorted(g.matmul_tflops for g in result.gpus if g.matmul_tflops is not None)
    word = "warn" if "WARN" in found.values() else "ok"
    return f"{word} {speeds[len(speeds) // 2]:.0f}T" if speeds else word


def _verify_style(value: str) -> str:
    if value == "FAIL":
        return "bold red"
    return "yellow" if value.startswith(("stale", "warn", "refused", "?")) else ""


def _serve(host: HostResult) -> str | None:
    """The served engine in a few words (`ready 312 s · 41 ms TTFT · 212 tok/s`, `failed:
    serve.oom`): the worst of them where there are several, and how many more."""
    data = host.data("serve", Serve)
    if data is None or not data.looked:
        return None
    from gpudash.probe.sections.serve import brief, worst_first

    states = worst_first(data.states)
    if not states:
        return "none"
    more = f" (+{len(states) - 1})" if len(states) > 1 else ""
    return brief(states[0], data.host_now) + more


def _serve_st(value: str) -> str:
    if value.startswith(("failed", "exited")):
        return "bold red"
    return "green" if value.startswith("ready") else "yellow" if value != "none" else ""


COLUMNS: tuple[Column, ...] = (
    Column("host", "host", lambda h: h.name, compare=False),
    Column("state", "state", _state, compare=False, floor=11, gives_first=True),
    Column("gpus", "GPUs", _gpus, section="gpus", floor=7),
    # cc and driver/CUDA tell GPUs apart (sm_100 vs sm_103, 580.95 vs 580.159): never cut.
    Column("cc", "cc", _cc, section="gpus"),
    Column("nvlink", "NVLink", _nvlink, section="topology", floor=10),
    Column("driver", "driver/CUDA", _driver, section="gpus"),
    Column("nvcc", "nvcc", _nvcc, section="toolkit", floor=7),
    Column("torch", "torch", _torch, section="env", floor=8),
    Column("models", "models", _models, section="models", floor=6),
    Column("network", "network", _network, section="network", floor=7),
    Column("health", "health", _health, section="health", floor=6),
    # Reads the host's findings too (stale, a slow GPU): recomputed at each snapshot, cheaply.
    Column("verify", "verify", _verify, compare=False, extra=True, style=_verify_style),
    Column("serve", "serve", _serve, compare=False, section="serve", extra=True, style=_serve_st),
    Column("gpu_mem", "GPU mem", _gpu_mem, section="gpus", extra=True),
    Column("cpus", "CPUs", _system("cpus"), section="system", extra=True),
    Column("ram", "RAM", _system("memory_total_bytes"), section="system", extra=True),
    Column("kernel", "kernel", _system("kernel"), section="system", extra=True),
    Column("os", "OS", _system("os", "os_id"), section="system", extra=True),
)


def majority(hosts: Iterable[HostResult], column: Column) -> str | None:
    """The most common reported value of a column, when at least two hosts report one."""
    return majority_of(Counter(v for h in hosts if (v := column.value(h)) is not None))


def majority_of(counts: Counter[str]) -> str | None:
    """`majority` from counts of the reported values (kept up to date by the fleet view)."""
    if sum(counts.values()) < 2:
        return None
    (value, count), *rest = [*counts.most_common(2), (None, 0)]
    return value if count > rest[0][1] else None


MAX_CELL = 40
"""No cell is wider, however wide the screen: one long value (an error, a list of torch
builds) must not push the others off it. Narrower screens cut further (`fit_widths`)."""


def _cut(text: Text) -> Text:
    if text.cell_len > MAX_CELL:
        text.truncate(MAX_CELL - 1)
        text.append("…", style="dim")
    return text


_UNKNOWN = object()


def cell(host: HostResult, column: Column, usual: str | None, value: object = _UNKNOWN) -> Text:
    """The cell as drawn; `value` is `column.value(host)` where the caller has it already."""
    return _cut(_cell(host, column, usual, column.value(host) if value is _UNKNOWN else value))


def _cell(host: HostResult, column: Column, usual: str | None, value: object) -> Text:
    if column.key == "state":
        return state_text(host, compact=True)
    if value is None:
        return Text("–", style="dim")
    if column.key == "host":
        return remote(value, style="bold")
    odd = column.compare and usual is not None and value != usual
    if odd:
        return remote(value, style="bold yellow reverse")
    return remote(value, style=column.style(str(value)) if column.style else "")


def sort_key(host: HostResult, column: Column) -> tuple[int, str]:
    return value_sort_key(column.value(host))


def value_sort_key(value: str | None) -> tuple[int, str]:
    """Unreported values last, the others without regard to case."""
    return (1, "") if value is None else (0, value.lower())
