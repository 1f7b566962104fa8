"""The system section: which machine this is, in one header line.

Hostname, OS, kernel, architecture, CPU model and count, memory and uptime come straight from
`uname`, `/etc/os-release` and `/proc`, which every Linux host has and which cost a few
milliseconds, rather than from `hostnamectl`/`free`/`lscpu` whose output varies by version
(`lscpu` is only the fallback for a CPU model on hosts whose cpuinfo names none, e.g. ARM).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpudash.probe.markdown import md_table
from gpudash.probe.parts import Part, text_of
from gpudash.text import clean_line
from gpudash.units import duration, human_bytes

NAME = "system"
TIMEOUT = 5.0

BODY = r"""
# Files are read with the `read` builtin: each `cat` or `grep` is a process on the host.
gd_cat() { while IFS= read -r _l || [ -n "$_l" ]; do printf '%s\n' "$_l"; done <"$1"; }
gd_os() {
  for f in /etc/os-release /usr/lib/os-release; do
    [ -r "$f" ] && { gd_cat "$f"; return 0; }
  done
  echo "os-release: not found"; return 1
}
# gd_first FILE PATTERN  print the first line matching the case PATTERN in FILE's first block
# (up to a blank line: one CPU's in cpuinfo); false if none there. `read` reads a byte per
# system call, so it stops early and the callers fall back to grep over the whole file.
gd_first() {
  [ -r "$1" ] || return 1
  while IFS= read -r _l || [ -n "$_l" ]; do
    case $_l in $2) printf '%s\n' "$_l"; return 0 ;; '') return 1 ;; esac
  done <"$1"
  return 1
}
gd_cpu() {
  gd_first /proc/cpuinfo '[Mm][Oo][Dd][Ee][Ll] [Nn][Aa][Mm][Ee]*' && return 0
  grep -m 1 -i '^model name' /proc/cpuinfo 2>/dev/null && return 0
  have lscpu && lscpu 2>/dev/null | grep -m 1 -i '^model name' && return 0
  grep -m 1 -i -E '^(hardware|cpu model|processor)[[:space:]]*:' /proc/cpuinfo
}
gd_ncpu() { nproc 2>/dev/null || getconf _NPROCESSORS_ONLN; }
# One uname for kernel and arch (it prints them in this order whatever the flags' order).
gd_un=$(uname -r -m 2>&1); gd_un_rc=$?
gd_uname() {
  [ "$gd_un_rc" = 0 ] || { printf '%s\n' "$gd_un"; return "$gd_un_rc"; }
  set -f; set -- $gd_un; set +f
  [ $# -eq 2 ] || { uname "$gd_flag"; return; }
  case $gd_flag in -r) printf '%s\n' "$1" ;; *) printf '%s\n' "$2" ;; esac
}
gd_meminfo() {
  gd_first /proc/meminfo 'MemTotal:*' && return 0
  grep -m 1 '^MemTotal:' /proc/meminfo
}
part hostname uname -n
part os gd_os
gd_flag=-r; part kernel gd_uname
gd_flag=-m; part arch gd_uname
part cpu gd_cpu
part ncpu gd_ncpu
part meminfo gd_meminfo
part uptime gd_cat /proc/uptime
"""


@dataclass(frozen=True)
class System:
    hostname: str | None = None
    os: str | None = None  # PRETTY_NAME, e.g. "Ubuntu 24.04.3 LTS"
    os_id: str | None = None  # ID, e.g. "ubuntu"
    os_version: str | None = None  # VERSION_ID, e.g. "24.04"
    kernel: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    cpus: int | None = None
    memory_total_bytes: int | None = None
    uptime_s: float | None = None
    notes: tuple[str, ...] = ()


def parse(parts: Mapping[str, Part]) -> System:
    notes: list[str] = []

    def line(name: str) -> str | None:
        part = parts.get(name)
        first = _first_line(part.text) if part is not None else ""
        if part is None or not part.ok or not first:
            why = "missing" if part is None else f"rc {part.rc}" if not part.ok else "empty"
            detail = f": {clean_line(first[:120])}" if part is not None and first else ""
            notes.append(f"{name}: {why}{detail}")
            return None
        return first

    hostname, kernel, arch = line("hostname"), line("kernel"), line("arch")
    os_fields = parse_os_release(text_of(parts, "os"))
    if not os_fields:
        notes.append("os: no os-release")
    cpu = line("cpu")
    cpu_model = cpu.split(":", 1)[1].strip() if cpu and ":" in cpu else cpu
    ncpu = line("ncpu")
    mem = line("meminfo")
    up = line("uptime")
    return System(
        hostname=_clean(hostname),
        os=_clean(os_fields.get("PRETTY_NAME") or os_fields.get("NAME")),
        os_id=_clean(os_fields.get("ID")),
        os_version=_clean(os_fields.get("VERSION_ID")),
        kernel=_clean(kernel),
        arch=_clean(arch),
        cpu_model=_clean(cpu_model),
        cpus=_int(ncpu),
        memory_total_bytes=_meminfo_bytes(mem),
        uptime_s=_float(up.split()[0] if up and up.split() else None),
        notes=tuple(notes),
    )


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines with shell-style quotes removed (os-release(5))."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        m = re.match(r"^\s*([A-Z][A-Z0-9_]*)=(.*)$", raw)
        if not m:
            continue
        value = m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        out[m.group(1)] = value
    return out


def _first_line(text: str) -> str:
    return next((s.strip() for s in text.splitlines() if s.strip()), "")


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = clean_line(value).strip()
    return value[:200] or None


def _int(value: str | None) -> int | None:
    return int(value) if value and re.fullmatch(r"\d{1,9}", value.strip()) else None


def _float(value: str | None) -> float | None:
    if value and re.fullmatch(r"\d{1,15}(\.\d{1,9})?", value.strip()):
        return float(value)
    return None


def _meminfo_bytes(line: str | None) -> int | None:
    m = re.match(r"^MemTotal:\s*(\d{1,18})\s*(kB)?", line or "", re.I)
    if not m:
        return None
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def summary(data: System) -> str:
    """The one line `gpudash probe` prints for this section."""
    cpu = f"{data.cpus or '?'} CPUs" + (f" ({data.cpu_model})" if data.cpu_model else "")
    memory = human_bytes(data.memory_total_bytes) + " RAM"
    return " · ".join(
        [
            data.hostname or "?",
            data.os or "?",
            f"kernel {data.kernel or '?'}",
            cpu,
            memory,
            f"up {duration(data.uptime_s)}",
        ]
    )


# --- its part of the Markdown report (`gpudash report HOST`)

TITLE = "System"


def report(s: System) -> list[str]:
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
    return md_table(["", ""], rows)
