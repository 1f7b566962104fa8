"""GPU health end to end: `gpudash check` over the test sshd, on fake hosts whose tools print
real captures (tests/support/fakegpu.py; sources in tests/fixtures/public/health/SOURCES.md and
tests/fixtures/h200-device/health/README.md).

Each broken host gives its health finding through the installed CLI, the probe's real shell and
the real checks; the real H200's own outputs give no health finding above ok.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import FIXTURES, fakegpu
from tests.support.configs import write_config
from tests.support.sshd import FakeHost, Sshd

H200 = FIXTURES / "h200-1x"
PUB = FIXTURES / "public" / "health"
DEVICE = FIXTURES / "h200-device" / "health" / "raw"
BASE = {
    "query_csv.txt": H200 / "query_csv.txt",
    "smi.txt": H200 / "smi.txt",
    "q.txt": DEVICE / "q.txt",
    "dmesg.txt": DEVICE / "dmesg_nvrm.txt",  # the H200's own NVRM lines: no Xid
}


def check(sshd: Sshd, host: FakeHost, tmp_path: Path) -> dict:
    config = tmp_path / "c.toml"
    write_config(config, sshd.host_toml(host, network_targets=[], connect_timeout=2))
    run = subprocess.run(
        [sys.executable, "-m", "gpudash", "--config", str(config), "check", "--json", "--all"],
        capture_output=True,
        text=True,
        timeout=90,
        env=os.environ.copy(),
    )
    assert run.returncode in (0, 1), run.stderr
    assert "Traceback" not in run.stderr
    return json.loads(run.stdout)["hosts"][0]


def _needs_lspci() -> None:
    """The fake bus is lspci's: the section asks it only where sysfs shows no NVIDIA function
    (a machine with GPUs of its own would show its real bus instead)."""
    devices = Path("/sys/bus/pci/devices")
    if any(
        (d / "vendor").exists() and (d / "vendor").read_text().strip() == "0x10de"
        for d in (devices.iterdir() if devices.is_dir() else ())
    ):
        pytest.skip("this machine has NVIDIA PCI functions of its own: sysfs wins over lspci")


def health(found: dict) -> dict[str, dict]:
    return {f["code"]: f for f in found["findings"] if f["code"].startswith("health.")}


def test_the_real_h200s_outputs_give_no_health_finding(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    """The fake host's bus is this machine's sysfs, which has no NVIDIA function (and no
    lspci is faked): the lost-GPU check cannot run, and the verdict says so beside ok."""
    _needs_lspci()
    fakegpu.install(fake_host.bin_dir, BASE)
    found = health(check(sshd, fake_host, tmp_path))
    assert list(found) == ["health.pci_unreadable", "health.ok"], found
    assert found["health.pci_unreadable"]["severity"] == "info"
    assert "kernel log (dmesg)" in found["health.ok"]["title"]
    assert "not read: PCI bus" in found["health.ok"]["title"]


def test_xid_79_in_dmesg_is_a_fail_naming_the_gpu(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    fakegpu.install(fake_host.bin_dir, {**BASE, "dmesg.txt": PUB / "xid-journal-79-rtx5080.txt"})
    found = health(check(sshd, fake_host, tmp_path))
    xid = found["health.xid_79"]
    assert xid["severity"] == "fail"
    assert "0000:2b:00" in xid["title"] and xid["fix"]
    assert "health.ok" not in found


def test_a_gpu_in_hw_slowdown_is_a_finding(sshd: Sshd, fake_host: FakeHost, tmp_path: Path) -> None:
    fakegpu.install(
        fake_host.bin_dir, {**BASE, "q.txt": PUB / "q-performance-varied-hw-slowdown.txt"}
    )
    found = health(check(sshd, fake_host, tmp_path))
    slow = found["health.clocks_slowdown"]
    assert slow["severity"] in ("warn", "fail")
    assert "HW Slowdown" in slow["title"]


def test_gpus_on_the_bus_that_nvidia_smi_does_not_list_are_lost(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    """lspci shows four GPUs (a public report's bus), nvidia-smi -q the one H200: four lost.
    This machine's sysfs has no NVIDIA function, so the section asks lspci, as on a sandbox."""
    _needs_lspci()
    fakegpu.install(fake_host.bin_dir, {**BASE, "lspci.txt": PUB / "lspci-4x-26b9.txt"})
    found = health(check(sshd, fake_host, tmp_path))
    lost = found["health.lost_gpus"]
    assert lost["severity"] == "fail"
    assert lost["facts"]["missing"] == [
        "0000:16:00",
        "0000:38:00",
        "0000:82:00",
        "0000:ac:00",
    ]


def test_a_fabric_manager_that_does_not_match_the_driver_is_a_fail(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    """NVSwitches on the bus (an HGX H100's lspci) make the section ask systemctl, whose real
    status block says the fabric manager refused the driver."""
    _needs_lspci()
    fakegpu.install(
        fake_host.bin_dir,
        {
            **BASE,
            "lspci.txt": PUB / "lspci-hgx-h100-8x-4nvswitch.txt",
            "systemctl.txt": PUB / "systemctl-fabricmanager-version-mismatch.txt",
        },
    )
    found = health(check(sshd, fake_host, tmp_path))
    fm = found["health.fabric_manager"]
    assert fm["severity"] == "fail"
    assert "550.120" in json.dumps(fm)


def test_xid_119_in_every_log_format_is_a_gsp_fail_with_its_fix(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    """A real Xid 119 (leptonai/gpud#500) behind the 17 prefixes dmesg and journalctl print."""
    fakegpu.install(fake_host.bin_dir, {**BASE, "dmesg.txt": PUB / "xid-119-varied-prefixes.txt"})
    found = health(check(sshd, fake_host, tmp_path))
    xid = found["health.xid_119"]
    assert xid["severity"] == "fail" and "(x17)" in xid["title"]
    assert "NVreg_EnableGpuFirmware=0" in xid["fix"]
    assert xid["facts"]["judged_from"] == "kernel log (dmesg)"


def test_a_fabric_in_progress_is_judged_on_a_gpu_without_nvswitch(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    """The H200's -q with gpu-operator#2511's Fabric State (In Progress): the fabric is
    judged on every GPU, with the host's own uptime deciding fail or "still booting"."""
    q = (DEVICE / "q.txt").read_text()
    old = "        State                                          : N/A\n"
    assert old in q
    derived = tmp_path / "q-in-progress.txt"
    derived.write_text(q.replace(old, old.replace("N/A", "In Progress"), 1))
    fakegpu.install(fake_host.bin_dir, {**BASE, "q.txt": derived})
    found = health(check(sshd, fake_host, tmp_path))
    fabric = found["health.fabric_state"]
    booted_long_ago = float(Path("/proc/uptime").read_text().split()[0]) > 600
    assert fabric["severity"] == ("fail" if booted_long_ago else "info")
    assert "In Progress" in fabric["title"] and fabric["facts"]["uptime_s"]
