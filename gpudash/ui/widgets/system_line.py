"""The header line of the host view: the host, its state, and the system section in one line."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from gpudash.model import HostResult
from gpudash.ui.host_state import state_text
from gpudash.ui.render import join, remote


def _get(data: Any, *names: str) -> Any:
    for name in names:
        value = getattr(data, name, None)
        if value not in (None, ""):
            return value
    return None


def system_bits(data: Any) -> list[Text]:
    """Whatever of hostname, OS, kernel, CPUs, memory and uptime the section read."""
    bits: list[Text] = []
    if data is None:
        return bits
    if (host := _get(data, "hostname")) is not None:
        bits.append(remote(host, style="bold"))
    if (os_name := _get(data, "os", "os_name", "pretty_name")) is not None:
        bits.append(remote(os_name))
    if (kernel := _get(data, "kernel", "kernel_release")) is not None:
        bits.append(Text.assemble("kernel ", remote(kernel)))
    if (cpus := _get(data, "cpus", "cpu_count", "nproc")) is not None:
        bits.append(Text.assemble(remote(cpus), " CPUs"))
    mem = _get(data, "memory_total_bytes", "mem_total_bytes")
    if mem is not None:
        bits.append(Text(f"{mem / 2**30:.0f} GiB RAM"))
    elif (mem_kib := _get(data, "memory_total_kib", "mem_total_kib")) is not None:
        bits.append(Text(f"{mem_kib / 2**20:.0f} GiB RAM"))
    up = _get(data, "uptime_s", "uptime_seconds")
    if isinstance(up, (int, float)):
        bits.append(Text(f"up {uptime(up)}"))
    return bits


def uptime(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {rest // 60}m"


def header(host: HostResult) -> Text:
    name = remote(host.name, style="bold reverse")
    line = Text.assemble(" ", name, " ")
    if host.state.value in ("pending", "connecting", "failed") or not host.sections:
        line.append(" ")
        line.append(state_text(host))
    section = host.sections.get("system")
    bits = system_bits(section.data if section else None)
    if section is not None and section.error and not bits:
        bits.append(remote(f"system: {section.error}", style="red"))
    if bits:
        line.append("  ")
        line.append(join(*bits))
    return line
