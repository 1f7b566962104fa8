"""The system section, run for real under dash (and busybox sh), and parsed from captures."""

from __future__ import annotations

import os
from pathlib import Path

from gpudash.probe.parts import Part
from gpudash.probe.sections import system
from tests.support import FIXTURES
from tests.support.sectionrun import bin_dir, busybox_sh, run_section

FIX = FIXTURES / "sections"


def _env(tmp_path: Path, path: str | None = None) -> dict[str, str]:
    return {"PATH": path or os.environ["PATH"], "HOME": str(tmp_path)}


def test_system_reports_this_machine_as_uname_and_proc_see_it(tmp_path: Path) -> None:
    parts, result = run_section(system, _env(tmp_path))
    assert isinstance(result, system.System)
    assert result.hostname == os.uname().nodename
    assert result.kernel == os.uname().release
    assert result.arch == os.uname().machine
    assert result.cpus == len(os.sched_getaffinity(0))
    with open("/proc/meminfo") as f:
        kib = int(f.readline().split()[1])
    assert result.memory_total_bytes == kib * 1024
    assert result.uptime_s is not None and result.uptime_s > 0
    assert result.os and result.os_id
    assert result.notes == ()
    assert all(p.rc == 0 for p in parts.values())


def test_system_reads_the_same_under_busybox_sh(tmp_path: Path) -> None:
    _, under_dash = run_section(system, _env(tmp_path))
    _, under_busybox = run_section(system, _env(tmp_path), shell=busybox_sh())
    assert isinstance(under_dash, system.System)
    assert isinstance(under_busybox, system.System)
    assert under_busybox.hostname == under_dash.hostname
    assert under_busybox.cpus == under_dash.cpus
    assert under_busybox.memory_total_bytes == under_dash.memory_total_bytes


def test_system_without_uname_or_nproc_notes_what_it_could_not_read(tmp_path: Path) -> None:
    path = bin_dir(tmp_path / "bin", ("cat", "grep"))
    _, result = run_section(system, _env(tmp_path, path))
    assert isinstance(result, system.System)
    assert result.hostname is None and result.kernel is None and result.cpus is None
    assert result.memory_total_bytes is not None  # /proc/meminfo needs only grep
    assert any(n.startswith("hostname:") for n in result.notes)
    assert any(n.startswith("ncpu:") for n in result.notes)


def test_system_parses_the_h200_capture() -> None:
    lines = (FIX / "sys.txt").read_text().splitlines()
    uname = lines[0].split()
    os_release = "\n".join(lines[1:14])
    model = next(line for line in lines if line.startswith("Model name:"))
    parts = {
        "hostname": Part("hostname", 0, uname[1]),
        "kernel": Part("kernel", 0, uname[2]),
        "arch": Part("arch", 0, uname[-2]),
        "os": Part("os", 0, os_release),
        "cpu": Part("cpu", 0, model),
        "ncpu": Part("ncpu", 0, lines[14]),
        "meminfo": Part("meminfo", 0, "MemTotal:       131899876 kB"),
        "uptime": Part("uptime", 0, "5321.20 84810.11"),
    }
    result = system.parse(parts)
    assert result.hostname == "vm"
    assert result.os == "Ubuntu 24.04.3 LTS"
    assert (result.os_id, result.os_version) == ("ubuntu", "24.04")
    assert result.kernel == "6.18.44-fc-v973-gpu"
    assert result.arch == "x86_64"
    assert result.cpu_model == "Intel(R) Xeon(R) Processor"
    assert result.cpus == 16
    assert result.memory_total_bytes == 131899876 * 1024
    assert result.uptime_s == 5321.2
    assert result.notes == ()


def test_system_parse_of_nothing_is_all_unknown_with_notes() -> None:
    result = system.parse({})
    assert result.hostname is None and result.cpus is None
    assert "hostname: missing" in result.notes


def test_system_cleans_escape_sequences_out_of_remote_names() -> None:
    parts = {"hostname": Part("hostname", 0, "evil\x1b]0;title\x07host")}
    assert system.parse(parts).hostname == "evilhost"
