"""Health: the Xid catalog, the health parsers over real captures, and the checks on them.

Public captures are in tests/fixtures/public/health (sources in SOURCES.md); the healthy
baseline is the real H200's `nvidia-smi -q` (tests/fixtures/h200-1x/q.txt).
"""

from __future__ import annotations

import pytest

from gpudash.checks import Severity
from gpudash.checks.facts import xid as xid_facts
from gpudash.checks.health import check_health
from gpudash.probe.hostfacts import parse_fabric_manager, parse_pci, parse_rdma
from gpudash.probe.kernel_log import bus_key, parse_kernel_log
from gpudash.probe.sections.health import Health, KernelLog, parse_klog
from gpudash.probe.smiq import parse_smi_q
from tests.support import FIXTURES

PUB = FIXTURES / "public" / "health"
H200_Q = (FIXTURES / "h200-1x" / "q.txt").read_text()


def pub(name: str) -> str:
    return (PUB / name).read_text()


def codes(findings) -> dict[str, Severity]:
    return {f.code: f.severity for f in findings}


def h200(**kw) -> Health:
    q = parse_smi_q(H200_Q)
    base = dict(driver_version=q.driver_version, gpus=q.gpus, kernel=KernelLog("dmesg", None, 600),
                pci=parse_pci("0000:00:06.0 0x030200 nvidia"), daemons=("nvidia-persiste",),
                shm_kib=64 * 1024 * 1024, memlock_kib=8192)  # fmt: skip
    base.update(kw)
    return Health(**base)


def test_the_catalog_has_the_blackwell_nvlink5_xids_and_its_source() -> None:
    for code in range(144, 151):
        assert xid_facts.info(code).action == "WORKFLOW_NVLINK5_ERR"
    assert xid_facts.CATALOG_URL.startswith("https://docs.nvidia.com/deploy/xid-errors/")


@pytest.mark.parametrize(
    ("code", "text", "severity"),
    [
        (79, "GPU has fallen off the bus.", "fail"),
        (48, "DBE", "fail"),
        (95, "Uncontained", "fail"),
        (119, "Timeout waiting for RPC from GSP", "fail"),
        (94, "Contained ECC error", "warn"),
        (13, "Graphics SM Warp Exception", "info"),
        (31, "Ch 0000000b", "info"),
        (43, "", "info"),
        (149, "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 ...)", "fail"),
        (145, "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 ...)", "warn"),
        (154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", "fail"),
        (154, "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)", "info"),
        (9999, "", "warn"),
    ],
)
def test_xid_severity_follows_the_catalogs_immediate_action(code, text, severity) -> None:
    assert xid_facts.severity_of(code, text) == severity


@pytest.mark.parametrize(
    ("name", "expected", "fallen"),
    [
        ("xid-dmesg-ctime-13-109.txt", [(13, "0000:cb:00", 3), (109, "0000:cb:00", 1)], ()),
        ("xid-kmsg-nvlink5-149-145-94.txt",
         [(149, "0019:01:00", 1), (149, "0000:00:00", 1), (145, "0018:01:00", 1),
          (94, "0000:9b:00", 1)], ()),
        ("xid-journal-79-rtx5080.txt", [(79, "0000:2b:00", 1)], ("0000:2b:00",)),
        ("dmesg-fallen-off-no-xid-multiline.txt", [], ("0000:b3:00",)),
        ("xid-syslog-32-69-62-gtx.txt", [(32, "0000:01:00", 1), (69, "0000:01:00", 2),
                                         (62, "0000:01:00", 1)], ()),
        ("xid-63-row-remapper.txt", [(63, "0000:10:1c", 1)], ()),
        ("xid-31-old-format.txt", [(31, "0000:01:00", 1)], ()),
    ],
)  # fmt: skip
def test_kernel_log_xids_and_fallen_off_gpus_from_real_logs(name, expected, fallen) -> None:
    """One entry per (GPU, Xid), counted, in the order each first appeared."""
    events = parse_kernel_log(pub(name))
    assert [(e.xid, e.bus, e.count) for e in events.xids] == expected
    assert events.fallen_off == fallen


def test_an_xid_line_keeps_its_pid_process_and_timestamp() -> None:
    e = parse_kernel_log(pub("xid-dmesg-ctime-13-109.txt")).xids[-1]
    assert (e.pid, e.process, e.when) == (1797828, "pt_main_thread", "[Fri Aug 30 11:43:14 2024]")
    first = parse_kernel_log(pub("xid-dmesg-ctime-13-109.txt")).xids[0]
    assert first.process is None and first.first_when == "[Fri Aug 30 11:43:09 2024]"


def test_bus_ids_of_every_tool_meet_in_one_key() -> None:
    assert bus_key("00000000:18:00.0") == bus_key("0000:18:00.0") == bus_key("PCI:0000:18:00")


def test_the_real_h200_reads_healthy_and_gives_no_health_finding() -> None:
    g = parse_smi_q(H200_Q).gpus[0]
    assert (g.bus_id, g.reasons, g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max) == (
        "00000000:00:06.0",
        ("Idle",),
        5,
        5,
        16,
        16,
    )
    assert (g.remap_pending, g.remap_failure, g.ecc_uncorrected_volatile) == (False, False, 0)
    assert g.recovery_action == "None"
    found = check_health(h200())
    assert [f.code for f in found] == ["health.ok"]


def test_throttle_reasons_idle_and_sw_power_cap_are_not_findings_hw_slowdown_is() -> None:
    for name in ("q-performance-idle-495.txt", "q-clocks-event-sw-power-cap.txt"):
        gpus = parse_smi_q(pub(name)).gpus
        assert gpus[0].reasons_read and "health.clocks_slowdown" not in codes(
            check_health(h200(gpus=gpus))
        )
    gpus = parse_smi_q(pub("q-performance-varied-hw-slowdown.txt")).gpus
    assert gpus[0].reasons == ("HW Slowdown", "HW Power Brake Slowdown")
    assert codes(check_health(h200(gpus=gpus)))["health.clocks_slowdown"] is Severity.WARN


def test_pcie_width_below_max_is_a_finding_a_generation_below_max_only_when_busy() -> None:
    lower = H200_Q.replace(
        "                Current                                : 16x",
        "                Current                                : 8x",
    )
    assert codes(check_health(h200(gpus=parse_smi_q(lower).gpus)))["health.pcie_width"]
    idle = H200_Q.replace(
        "                Current                                : 5\n",
        "                Current                                : 1\n",
        1,
    )
    g = parse_smi_q(idle).gpus[0]
    assert g.pcie_gen == 1 and "health.pcie_gen" not in codes(check_health(h200(gpus=(g,))))
    busy = idle.replace(
        "        GPU                                            : 0 %",
        "        GPU                                            : 97 %",
    )
    assert "health.pcie_gen" in codes(check_health(h200(gpus=parse_smi_q(busy).gpus)))


def test_a_pending_row_remap_asks_for_a_reset_and_a_remap_failure_fails() -> None:
    gpus = parse_smi_q(pub("q-remapped-rows-pending-partial.txt")).gpus
    assert (gpus[0].remap_uncorrectable, gpus[0].remap_pending) == (4, True)
    found = check_health(h200(gpus=gpus))
    assert codes(found)["health.reset_pending"] is Severity.WARN
    failed = H200_Q.replace(
        "Remapping Failure Occurred                     : No",
        "Remapping Failure Occurred                     : Yes",
    )
    assert codes(check_health(h200(gpus=parse_smi_q(failed).gpus)))["health.remap_failure"] is (
        Severity.FAIL
    )


def test_gpus_on_the_bus_that_nvidia_smi_lacks_fail_naming_their_bus_ids() -> None:
    # NVSentinel#684's lspci (4 GPUs) beside the H200's -q (its one GPU is at 00:06.0).
    h = h200(pci=parse_pci(pub("lspci-4x-26b9.txt")))
    lost = next(f for f in check_health(h) if f.code == "health.lost_gpus")
    assert lost.severity is Severity.FAIL
    assert lost.facts["missing"] == ["0000:16:00", "0000:38:00", "0000:82:00", "0000:ac:00"]
    passed = h200(pci=parse_pci("0000:00:06.0 0x030200 nvidia\n0000:17:00.0 0x030200 vfio-pci"))
    assert "health.lost_gpus" not in codes(check_health(passed))


def test_xids_in_the_log_are_findings_by_catalog_severity_named_by_gpu_index() -> None:
    klog = parse_klog("@try dmesg\n" + pub("xid-journal-79-rtx5080.txt") + "\n@end 0 900 3")
    found = check_health(h200(kernel=klog))
    f = next(x for x in found if x.code == "health.xid_79")
    assert f.severity is Severity.FAIL and "0000:2b:00" in f.title and f.fix
    h = check_health(
        h200(
            kernel=parse_klog(
                "@try dmesg\n"
                + H200_Q[:0]
                + "[ 1.0] NVRM: Xid (PCI:0000:00:06): 13, pid=7, name=python, x\n@end 0 5 1"
            )
        )
    )
    assert [x.title for x in h if x.code == "health.xid_13"] == [
        "Xid 13 on GPU 0 (0000:00:06): Graphics Engine Exception"
    ]


def test_an_unreadable_kernel_log_is_said_not_passed() -> None:
    klog = parse_klog("@try dmesg\ndmesg: read kernel buffer failed: Operation not permitted\n"
                      "@end 1 1 1\n@try journalctl\nHint: You are currently not seeing messages"
                      " from other users and the system.\n@end 0 1 1")  # fmt: skip
    assert klog.source is None and "Operation not permitted" in klog.why_unreadable
    found = codes(check_health(h200(kernel=klog)))
    assert found["health.kernel_log_unreadable"] is Severity.INFO


def test_rdma_ports_down_beside_active_ports_of_their_class_are_findings() -> None:
    ports = parse_rdma(pub("ibstat-a100-mlx5_1-down-partial.txt"))
    assert [(p.device, p.state, p.rate_gbps, p.model) for p in ports] == [
        ("mlx5_0", "ACTIVE", 200.0, "MT4123"),
        ("mlx5_1", "DOWN", 10.0, "MT4123"),
    ]
    # ibstatus prints no CA type: the same ports, their model unknown
    assert [
        (p.device, p.state, p.rate_gbps) for p in parse_rdma(pub("ibstatus-mlx5_1-down.txt"))
    ] == [(p.device, p.state, p.rate_gbps) for p in ports]
    found = codes(check_health(h200(rdma=ports, memlock_unlimited=True)))
    assert found["health.rdma_down"] is Severity.WARN


def test_small_shm_and_low_memlock_with_rdma_warn() -> None:
    ports = parse_rdma(pub("ibstat-h100-mlx5_5-active-400.txt"))
    found = codes(check_health(h200(shm_kib=65536, rdma=ports, memlock_kib=64)))
    assert found["health.shm_small"] is Severity.WARN and found["health.memlock"]
    assert "health.memlock" not in codes(check_health(h200(memlock_kib=64)))


def test_a_fabric_manager_that_does_not_match_the_driver_fails() -> None:
    fm = parse_fabric_manager(pub("systemctl-fabricmanager-version-mismatch.txt"), "")
    assert (fm.version, fm.driver_seen, fm.active) == ("550.127.05", "550.120", "failed")
    found = [f for f in check_health(h200(fabric_manager=fm)) if f.code == "health.fabric_manager"]
    assert found[0].severity is Severity.FAIL and "550.120" in found[0].title


@pytest.mark.parametrize("kind", ["nvml", "smi"])
def test_the_real_h200_comes_out_healthy(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The lent H200's own probe (tests/fixtures/h200-device/health/): `gpudash check` over it
    gives health.ok and nothing else from the health checks."""
    import json

    from gpudash.cli.main import main

    saved = FIXTURES / "h200-device" / "health" / f"save-{kind}"
    main(["check", "--replay", str(saved), "--json", "--all"])
    found = json.loads(capsys.readouterr().out)["hosts"][0]["findings"]
    mine = [f for f in found if f["code"].startswith("health.")]
    assert [(f["code"], f["severity"]) for f in mine] == [("health.ok", "ok")]
    assert "1 GPU(s), kernel log (dmesg)" in mine[0]["title"]


def test_a_superscript_or_arabic_digit_is_no_number_to_any_parser() -> None:
    """`'¹'.isdigit()` is true but `int('¹')` raises: a host printing it once crashed the
    health parser (found by the totality test above)."""
    from gpudash.probe.hostfacts import parse_memlock, parse_shm_kib

    assert parse_memlock("¹\n") == (False, None)
    assert parse_memlock("٣٤\n") == (False, None)
    assert parse_memlock("64\n") == (False, 64)
    assert parse_shm_kib("Filesystem 1024-blocks\ntmpfs ²² 0 1 0% /dev/shm\n") is None
