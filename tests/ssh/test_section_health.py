"""The health section's shell body, run for real by dash and busybox sh against fake tools that
print real captures (the H200's `nvidia-smi -q`, a public Xid 79 log), and against a dmesg that
is refused, as on hosts with kernel.dmesg_restrict=1."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from gpudash.probe.sections import health
from tests.support import FIXTURES
from tests.support.sectionrun import (
    BASIC_TOOLS,
    SHELL_NAMES,
    bin_dir,
    run_raw,
    run_section,
    script_tool,
    shell_argv,
)

XID_LOG = FIXTURES / "public" / "health" / "xid-journal-79-rtx5080.txt"
H200_Q = FIXTURES / "h200-1x" / "q.txt"


def _host(tmp: Path, dmesg: str) -> dict[str, str]:
    bins = bin_dir(tmp / "bin", (*BASIC_TOOLS, "awk"))
    script_tool(tmp / "bin", "nvidia-smi", f'[ "$*" = -q ] && exec cat {shlex.quote(str(H200_Q))}')
    script_tool(tmp / "bin", "dmesg", dmesg)
    return {"PATH": bins, "HOME": str(tmp)}


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_xids_and_the_h200s_gpu_come_through_the_real_shell(tmp_path: Path, shell: str) -> None:
    env = _host(tmp_path, f"cat {shlex.quote(str(XID_LOG))}")
    parts, h = run_section(health, env, shell=shell_argv(shell))
    assert h.kernel.source == "dmesg" and [e.xid for e in h.kernel.xids] == [79]
    assert h.gpus[0].bus_id == "00000000:00:06.0" and h.driver_version == "580.159.04"
    assert h.memlock_unlimited or h.memlock_kib is not None
    assert parts["fm"].text.strip() == "no NVSwitch" or h.nvswitches


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_a_refused_dmesg_without_journalctl_is_reported_unreadable(
    tmp_path: Path, shell: str
) -> None:
    env = _host(
        tmp_path, 'echo "dmesg: read kernel buffer failed: Operation not permitted"; exit 1'
    )
    _, h = run_section(health, env, shell=shell_argv(shell))
    assert h.kernel.source is None and "Operation not permitted" in h.kernel.why_unreadable


def test_the_section_runs_fast(tmp_path: Path) -> None:
    env = _host(tmp_path, f"cat {shlex.quote(str(XID_LOG))}")
    took = min(run_raw(health, env)[2] for _ in range(3))
    assert took < 0.5, took


# --- issue 31: the kernel log however long and in whatever format, and what was not read ----

PUB = FIXTURES / "public" / "health"
BURST_LOG = "\n".join(
    [(PUB / "xid-journal-79-rtx5080.txt").read_text().splitlines()[1]]
    + [(PUB / "xid-dmesg-ctime-13-109.txt").read_text().splitlines()[1]] * 500
    + [
        (PUB / "xid-dmesg-ctime-13-109.txt")
        .read_text()
        .splitlines()[4]
        .replace("): 109,", "): 43,")
    ]
)


def _awks(tmp: Path) -> list[tuple[str, str]]:
    """Every awk this machine has, as `awk` on a PATH of its own: mawk (Debian's), and
    busybox's (Alpine's, most containers')."""
    out = []
    for name, target in (("mawk", shutil.which("mawk")), ("busybox", shutil.which("busybox"))):
        if target:
            d = tmp / f"awk-{name}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "awk").symlink_to(target)
            out.append((name, str(d)))
    assert out, "no awk on this machine"
    return out


def _host_with(tmp: Path, dmesg_file: Path, awk_dir: str | None) -> dict[str, str]:
    env = _host(tmp, f"cat {shlex.quote(str(dmesg_file))}")
    bins = env["PATH"].split(":")[0]
    (Path(bins) / "awk").unlink(missing_ok=True)  # each test names its awk
    env["PATH"] = ":".join(p for p in (awk_dir, bins) if p)
    return env


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_a_burst_of_500_xid_13_keeps_the_xid_79_before_it_with_every_awk(
    tmp_path: Path, shell
) -> None:
    """The old filter kept the last 400 NVRM lines: the Xid 79 was gone. Now each (GPU, Xid)
    is kept with its count, under mawk and busybox awk alike."""
    log = tmp_path / "burst.txt"
    log.write_text(BURST_LOG + "\n")
    for name, awk_dir in _awks(tmp_path):
        parts, h = run_section(
            health, _host_with(tmp_path / name, log, awk_dir), shell=shell_argv(shell)
        )
        assert [(e.xid, e.count) for e in h.kernel.xids] == [(79, 1), (13, 500), (43, 1)], name
        assert h.kernel.source == "dmesg" and not h.kernel.truncated, name
        assert h.kernel.lines_read == 502 and len(parts["klog"].text) < 4000, name


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_xid_119_in_every_log_format_comes_through_the_shell(tmp_path: Path, shell) -> None:
    for name, awk_dir in _awks(tmp_path):
        env = _host_with(tmp_path / name, PUB / "xid-119-varied-prefixes.txt", awk_dir)
        _, h = run_section(health, env, shell=shell_argv(shell))
        assert [(e.xid, e.bus, e.count) for e in h.kernel.xids] == [(119, "0000:9b:00", 17)]


def test_a_host_without_awk_has_its_kernel_log_not_read(tmp_path: Path) -> None:
    """Old: "awk: not found" was parsed as a pasted log, "nothing wrong (pasted)"."""
    env = _host_with(tmp_path, PUB / "xid-journal-79-rtx5080.txt", None)
    _, h = run_section(health, env)
    assert h.kernel.source is None and "awk: not found" in h.kernel.why_unreadable


def test_a_host_without_dmesg_or_journalctl_has_its_kernel_log_not_read(tmp_path: Path) -> None:
    env = _host_with(tmp_path, PUB / "xid-journal-79-rtx5080.txt", _awks(tmp_path)[0][1])
    (Path(env["PATH"].split(":")[1]) / "dmesg").unlink()
    _, h = run_section(health, env)
    assert h.kernel.source is None
    assert h.kernel.why_unreadable == "neither dmesg nor journalctl is on PATH"


def test_nvswitches_without_systemctl_leave_the_fabric_manager_unknown(tmp_path: Path) -> None:
    """A container: NVSwitches on the bus (lspci), no systemctl. Old: printed nothing, read
    as "not running"."""
    env = _host(tmp_path, "true")
    script_tool(
        tmp_path / "bin",
        "lspci",
        f"cat {shlex.quote(str(PUB / 'lspci-hgx-h100-8x-4nvswitch.txt'))}",
    )
    if _sysfs_has_nvidia():
        pytest.skip("this machine's sysfs has NVIDIA functions: lspci is not asked")
    parts, h = run_section(health, env)
    assert parts["fm"].text.strip() == "@no-systemctl"
    assert h.fabric_manager is not None and h.fabric_manager.active is None
    assert "no systemctl" in h.fabric_manager.unknown


def test_a_sysfs_without_the_gpus_and_no_lspci_is_a_bus_not_read(tmp_path: Path) -> None:
    """This machine's sysfs has no NVIDIA function and the host has no lspci: the bus reads
    as empty while nvidia-smi lists the H200, so the lost-GPU check cannot run."""
    if _sysfs_has_nvidia():
        pytest.skip("this machine's sysfs has NVIDIA functions of its own")
    from gpudash.checks.health import check_health

    _, h = run_section(health, _host(tmp_path, "true"))
    assert h.pci == () and len(h.gpus) == 1
    found = {f.code: f for f in check_health(h)}
    assert "lost-GPU check did not run" in found["health.pci_unreadable"].title
    assert "not read: PCI bus" in found["health.ok"].title


def _sysfs_has_nvidia() -> bool:
    devices = Path("/sys/bus/pci/devices")
    return any(
        (d / "vendor").exists() and (d / "vendor").read_text().strip() == "0x10de"
        for d in (devices.iterdir() if devices.is_dir() else ())
    )


def _h200_formats() -> dict[str, str]:
    """The lent H200's own NVRM lines in every dmesg time format (raw/dmesg_formats.txt)."""
    text = (FIXTURES / "h200-device" / "health" / "raw" / "dmesg_formats.txt").read_text()
    out: dict[str, str] = {}
    for block in text.split("## dmesg")[1:]:
        head, _, body = block.partition("\n")
        out[head.split("|")[0].strip() or "plain"] = body.split("## rc")[0]
    return out


@pytest.mark.parametrize("fmt", list(_h200_formats()))
def test_the_real_h200s_log_in_every_dmesg_format_is_read_and_clean(tmp_path: Path, fmt) -> None:
    """No Xid on the healthy H200, whatever format its dmesg printed: read (never "not
    read"), its NVRM lines kept, nothing found."""
    log = tmp_path / "nvrm.txt"
    log.write_text(_h200_formats()[fmt])
    parts, h = run_section(health, _host_with(tmp_path, log, _awks(tmp_path)[0][1]))
    assert h.kernel.source == "dmesg" and h.kernel.xids == () and h.kernel.fallen_off == ()
    assert parts["klog"].text.count("NVRM:") == 3 and h.kernel.lines_read == 3


def test_the_probe_keeps_a_fatal_nvlink5_xid_apart_from_its_nonfatal_burst(tmp_path: Path) -> None:
    """leptonai/gpud#1174's NETIR Fatal Xid 149 between two of its RLW Nonfatal lines, all
    on one GPU and numbered 149 (the only changes): the filter keeps the first and the last
    line per key, so were fatal and non-fatal one key the Fatal line would be lost."""
    lines = (PUB / "xid-kmsg-nvlink5-149-145-94.txt").read_text().splitlines()
    fatal = lines[0].replace("PCI:0019:01:00", "PCI:0018:01:00")
    nonfatal = lines[2].replace("): 145,", "): 149,")
    log = tmp_path / "nvlink5.txt"
    log.write_text("\n".join([nonfatal, fatal, nonfatal]) + "\n")
    for name, awk_dir in _awks(tmp_path):
        parts, h = run_section(health, _host_with(tmp_path / name, log, awk_dir))
        assert "NETIR Fatal" in parts["klog"].text, name
        got = [(e.xid, e.count, "Nonfatal" not in e.text) for e in h.kernel.xids]
        assert got == [(149, 2, False), (149, 1, True)], name
