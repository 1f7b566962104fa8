"""Health verdicts on real outputs of broken machines (issue 31): memory errors read with the
GPU's repair state, the NVLink fabric on every GPU and its manager, RDMA ports judged within
their class, and what could not be read said as such. Sources: tests/fixtures/public/health/
SOURCES.md; the healthy baseline is the real H200 (tests/fixtures/h200-1x/q.txt), changed by
the replacements each test shows where a public capture gives only a block."""

from __future__ import annotations

from dataclasses import replace

from gpudash.checks import Severity
from gpudash.checks.health import check_health
from gpudash.probe.hostfacts import parse_fabric_manager, parse_pci, parse_rdma
from gpudash.probe.sections.health import parse_klog
from gpudash.probe.smiq import parse_smi_q
from tests.unit.test_health import H200_Q, codes, h200, pub

H200_BUS = "PCI:0000:00:06"
REMAP = (
    "        Uncorrectable Error                            : 0\n"
    "        Inactive Uncorrectable Error                   : 0\n"
    "        Pending                                        : No\n"
)


def _q(**blocks: str) -> str:
    """The H200's -q with some values replaced by a public capture's (named in each test)."""
    q = H200_Q
    for old, new in blocks.values():
        assert old in q, old
        q = q.replace(old, new, 1)
    return q


def _rebus(text: str, bus: str) -> str:
    """A public Xid line re-addressed to the H200's bus (the only change)."""
    return text.replace(bus, H200_BUS)


# --- memory (item 2) --------------------------------------------------------------------


def _memory_host() -> tuple:
    """gpu-operator#1146's Xid 48 and ml-engineering's Xid 63, on the H200's bus, with
    gpud#80's Remapped Rows (Uncorrectable 4, Pending Yes) in the H200's -q."""
    log = _rebus(pub("xid-48-syslog-gpuop1146-partial.txt"), "PCI:0000:07:00") + _rebus(
        pub("xid-63-row-remapper.txt"), "PCI:0000:10:1c"
    )
    q = _q(remap=(REMAP, REMAP.replace(": 0", ": 4", 1).replace(": No", ": Yes")))
    return parse_klog(f"@try dmesg\n{log}\n@end 0 2 2 0"), parse_smi_q(q).gpus


def test_xid_48_beside_63_leads_to_the_gpus_pending_row_remap() -> None:
    """Old: Xid 48 a fail and Xid 63 a lone info line ("GPU memory remapping event"), neither
    naming the remap state. Now one finding joins them to the GPU's Remapped Rows."""
    klog, gpus = _memory_host()
    assert gpus[0].remap_pending and gpus[0].remap_uncorrectable == 4
    found = check_health(h200(kernel=klog, gpus=gpus))
    by = {f.code: f for f in found}
    joined = by["health.memory_xid"]
    assert joined.severity is Severity.FAIL  # Xid 48: the catalog's WORKFLOW_XID_48
    assert "Xid 48, Xid 63" in joined.title and "a repair is pending" in joined.title
    assert joined.facts["remap_pending"] is True and joined.facts["xids"] == {"48": 1, "63": 1}
    assert "Remapped Rows" in joined.facts["judged_from"]
    assert "health.xid_63" not in by and "health.xid_48" not in by  # no lone lines
    assert by["health.reset_pending"].severity is Severity.WARN


def test_a_memory_xid_whose_gpu_state_is_unread_says_so() -> None:
    klog, _ = _memory_host()
    health = h200(
        kernel=klog, gpus=parse_smi_q(_q(no_remap=("    Remapped Rows\n", "    X\n"))).gpus
    )
    health = h200(kernel=klog, gpus=())
    found = {f.code: f for f in check_health(health)}
    # no -q at all: the Xids stand alone, by the catalog
    assert found["health.xid_48"].severity is Severity.FAIL and "health.xid_63" in found


def test_pending_page_blacklist_and_retired_pages_of_pre_ampere_gpus_are_findings() -> None:
    gpus = parse_smi_q(pub("q-retired-pages-azurehpc-8x.txt")).gpus
    assert [(g.retired_sbe, g.retired_dbe, g.retired_pending) for g in gpus[:2]] == [
        (60, 5, False),
        (2, 61, True),
    ]
    found = check_health(h200(gpus=gpus))
    pending = [f for f in found if f.code == "health.reset_pending"]
    assert len(pending) == 4 and all("page retirement" in f.title for f in pending)
    assert all(f.severity is Severity.WARN for f in pending)
    retired = [f for f in found if f.code == "health.retired_pages"]
    assert [f.facts["dbe"] for f in retired] == [5]  # GPU 0: retired, nothing pending
    assert pending[0].facts["retired_pages_dbe"] == 61
    assert all(f.facts["judged_from"] == "nvidia-smi -q" for f in pending)


# --- fabric (item 4) ---------------------------------------------------------------------

_FABRIC = (
    "        State                                          : N/A\n"
    "        Status                                         : N/A\n"
)


def _fabric(state: str, status: str) -> tuple:
    """The H200's Fabric block set to a public capture's State and Status."""
    new = _FABRIC.replace(": N/A", f": {state}", 1).replace(
        "Status                                         : N/A", f"Status{' ' * 41}: {status}"
    )
    return parse_smi_q(_q(fabric=(_FABRIC, new))).gpus


def test_the_fabric_block_is_read_on_every_gpu() -> None:
    (g,) = parse_smi_q(pub("q-fabric-in-progress-gpuop2511-partial.txt")).gpus
    assert (g.fabric_state, g.fabric_status) == ("In Progress", None)
    (g,) = parse_smi_q(pub("q-fabric-completed-insufficient-azhpc506-partial.txt")).gpus
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Insufficient Resources")
    assert parse_smi_q(H200_Q).gpus[0].fabric_state is None  # N/A: not judged


def test_fabric_in_progress_long_after_boot_fails_and_points_to_802() -> None:
    gpus = _fabric("In Progress", "N/A")  # gpu-operator#2511's values
    f = next(
        x for x in check_health(h200(gpus=gpus), uptime_s=7200) if x.code == "health.fabric_state"
    )
    assert f.severity is Severity.FAIL and "120 min after boot" in f.title and "802" in f.why
    young = check_health(h200(gpus=gpus), uptime_s=60)
    assert codes(young)["health.fabric_state"] is Severity.INFO  # still booting
    seen = check_health(
        h200(gpus=gpus), uptime_s=7200, evidence=["CUDA error 802: system not yet initialized"]
    )
    f = next(x for x in seen if x.code == "health.fabric_state")
    assert "This host's CUDA did fail with 802" in f.why and f.facts["cuda_error_802"]


def test_fabric_completed_with_a_status_other_than_success_fails() -> None:
    """Azure/azhpc-images#506: such a node passed a check that only looked for N/A."""
    gpus = _fabric("Completed", "Insufficient Resources")
    f = next(
        x for x in check_health(h200(gpus=gpus), uptime_s=7200) if x.code == "health.fabric_state"
    )
    assert f.severity is Severity.FAIL and "Insufficient Resources" in f.title
    assert "health.fabric_state" not in codes(
        check_health(h200(gpus=_fabric("Completed", "Success")))
    )


def test_a_failed_fabric_manager_beside_a_completed_fabric_warns() -> None:
    fm = parse_fabric_manager(pub("systemctl-fabricmanager-failed-nvsentinel883-partial.txt"), "")
    assert fm.active == "failed"
    hgx = parse_pci(pub("lspci-hgx-h100-8x-4nvswitch.txt"))
    up = h200(gpus=_fabric("Completed", "Success"), fabric_manager=fm, pci=hgx)
    f = next(x for x in check_health(up) if x.code == "health.fabric_manager")
    assert f.severity is Severity.WARN and "still reads Completed" in f.title
    down = h200(gpus=_fabric("In Progress", "N/A"), fabric_manager=fm, pci=hgx)
    assert codes(check_health(down))["health.fabric_manager"] is Severity.FAIL


def test_no_systemctl_is_an_unknown_fabric_manager_never_not_running() -> None:
    """Old: a container without systemctl printed nothing, read as "not running": FAIL."""
    hgx = parse_pci(pub("lspci-hgx-h100-8x-4nvswitch.txt"))
    for status in ("@no-systemctl", "System has not been booted with systemd as init system "
                   "(PID 1). Can't operate.", ""):  # fmt: skip
        fm = parse_fabric_manager(status, "")
        assert fm.active is None and fm.unknown
        found = check_health(h200(fabric_manager=fm, pci=hgx, gpus=_fabric("Completed", "Success")))
        assert "health.fabric_manager" not in codes(found)
        assert codes(found)["health.fabric_manager_unknown"] is Severity.INFO
    missing = parse_fabric_manager("Unit nvidia-fabricmanager.service could not be found.", "")
    assert missing.active == "not-found"
    assert codes(check_health(h200(fabric_manager=missing, pci=hgx)))["health.fabric_manager"] is (
        Severity.FAIL
    )


# --- RDMA (item 5) -----------------------------------------------------------------------


def test_front_end_nics_of_another_class_beside_400g_rails_are_not_a_finding() -> None:
    """Mooncake#2039's host: a CX-7 IB port at 400 and a CX-6 Dx Ethernet port down. Old: the
    down port was a warn. Beside it, l2fwd-nv#6's two CX-6 Dx Ethernet ports at 100 and
    nccl#1591's CX-7 IB port at 400 (three hosts' ports on one, said so): old, "2 RDMA
    port(s) below 400 Gb/s"."""
    one = parse_rdma(pub("ibstat-mooncake2039-cx7-ib400-cx6-eth-partial.txt"))
    assert [(p.model, p.link_layer, p.state) for p in one] == [
        ("MT4129", "InfiniBand", "ACTIVE"),
        ("MT4125", "Ethernet", "DOWN"),
    ]
    found = codes(check_health(h200(rdma=one, memlock_unlimited=True)))
    assert "health.rdma_down" not in found and found["health.rdma_class_down"] is Severity.INFO
    mixed = parse_rdma(
        pub("ibstat-h100-mlx5_5-active-400.txt") + pub("ibstat-l2fwd6-cx6dx-eth100.txt")
    )
    found = codes(check_health(h200(rdma=mixed, memlock_unlimited=True)))
    assert "health.rdma_slow" not in found and "health.rdma_down" not in found


def _commented_ibstat() -> list:
    """Eight CX-7 IB rails at 400 and a bonded CX-6 Dx Ethernet port at 100, all Active, on one
    real host (code index id 21265854511; ibstat-8x-cx7-ib400-cx6dx-bond-eth100-commented
    .SOURCE.md). The notes comment every line with "# "; that mark is the only thing removed."""
    text = pub("ibstat-8x-cx7-ib400-cx6dx-bond-eth100-commented.txt")
    return list(parse_rdma("".join(line[2:] for line in text.splitlines(keepends=True))))


def test_a_100g_front_end_port_active_beside_eight_400g_rails_is_not_a_finding() -> None:
    ports = _commented_ibstat()
    assert len(ports) == 9 and {p.state for p in ports} == {"ACTIVE"}
    assert sorted({(p.model, p.link_layer, p.rate_gbps) for p in ports}) == [
        ("MT4125", "Ethernet", 100.0),
        ("MT4129", "InfiniBand", 400.0),
    ]
    found = codes(check_health(h200(rdma=ports, memlock_unlimited=True)))
    assert not [c for c in found if c.startswith("health.rdma")], found


def test_one_of_the_eight_real_rails_at_200_is_named_against_its_own_class() -> None:
    ports = _commented_ibstat()
    ports[3] = replace(ports[3], rate_gbps=200.0)  # mlx5_5 at 200
    f = next(
        x
        for x in check_health(h200(rdma=ports, memlock_unlimited=True))
        if x.code == "health.rdma_slow"
    )
    assert "mlx5_5/1 200 of 400 Gb/s (MT4129 InfiniBand)" in f.title
    assert "mlx5_bond_0" not in f.title


def test_a_rail_slower_than_its_own_class_is_still_a_finding() -> None:
    rails = parse_rdma(pub("ibstat-l2fwd6-cx6dx-eth100.txt").replace("Rate: 100", "Rate: 25", 1))
    f = next(
        x
        for x in check_health(h200(rdma=rails, memlock_unlimited=True))
        if x.code == "health.rdma_slow"
    )
    assert "mlx5_0/1 25 of 100 Gb/s (MT4125 Ethernet)" in f.title


def test_the_sysfs_line_carries_the_hca_type() -> None:
    (p,) = parse_rdma("mlx5_0 1|4: ACTIVE|5: LinkUp|400 Gb/sec (4X NDR)|InfiniBand|MT4129")
    assert (p.model, p.rate_gbps, p.link_layer) == ("MT4129", 400.0, "InfiniBand")
    (p,) = parse_rdma("mlx5_0 1|4: ACTIVE|5: LinkUp|400 Gb/sec (4X NDR)|InfiniBand")  # older probe
    assert p.model is None and p.link_layer == "InfiniBand"


# --- what was not read (item 6) ------------------------------------------------------------


def test_an_unreadable_pci_bus_is_a_finding_and_health_ok_says_it_was_not_read() -> None:
    """Old: a note beside "GPU health: nothing wrong"."""
    found = check_health(h200(pci=None, pci_why="no /sys/bus/pci and no lspci"))
    f = next(x for x in found if x.code == "health.pci_unreadable")
    assert f.severity is Severity.INFO and "lost-GPU check did not run" in f.title
    assert "no /sys/bus/pci and no lspci" in f.title
    ok = next(x for x in found if x.code == "health.ok")
    assert "not read: PCI bus" in ok.title


def test_a_bus_that_shows_none_of_the_gpus_nvidia_smi_lists_was_not_really_read() -> None:
    """A sandbox's sysfs without the devices reads as zero NVIDIA functions."""
    found = check_health(h200(pci=()))
    f = next(x for x in found if x.code == "health.pci_unreadable")
    assert "shows no NVIDIA GPU while nvidia-smi lists 1" in f.title


def test_a_verify_run_that_hit_cuda_802_points_to_the_fabric() -> None:
    """Through the check's own context: the verify section's torch error (the text CUDA prints
    for 802) and the system section's uptime reach the fabric verdict."""
    from gpudash.checks.context import Context
    from gpudash.checks.health import check
    from gpudash.probe.sections.system import System
    from gpudash.probe.sections.verify import VerifySection
    from gpudash.probe.verify import VerifyResult, VerifyTorch

    err = "RuntimeError: CUDA error: system not yet initialized (error 802)"
    verify = VerifySection(VerifyResult("fail", torch=VerifyTorch(error=err)))
    sections = {"health": h200(), "verify": verify, "system": System(uptime_s=9000.0)}
    f = next(x for x in check(Context(None, None, (), sections)) if x.code == "health.cuda_802")
    assert f.severity is Severity.FAIL and "fabric state not reported" in f.title
    sections["health"] = h200(gpus=_fabric("In Progress", "N/A"))
    found = {x.code: x for x in check(Context(None, None, (), sections))}
    assert "health.cuda_802" not in found  # the fabric finding carries it instead
    assert found["health.fabric_state"].facts["cuda_error_802"] == err
    assert found["health.fabric_state"].severity is Severity.FAIL  # 150 min after boot


def test_every_health_finding_says_what_it_was_judged_from() -> None:
    """Many faults at once (each from a test above): no finding without its source."""
    klog, gpus = _memory_host()
    fm = parse_fabric_manager(pub("systemctl-fabricmanager-failed-nvsentinel883-partial.txt"), "")
    slow = parse_smi_q(pub("q-performance-varied-hw-slowdown.txt")).gpus
    health = h200(
        kernel=klog,
        gpus=gpus + slow + _fabric("In Progress", "N/A"),
        fabric_manager=fm,
        pci=parse_pci(pub("lspci-4x-26b9.txt")),
        rdma=parse_rdma(pub("ibstat-a100-mlx5_1-down-partial.txt")),
        shm_kib=65536,
        daemons=(),
    )
    found = check_health(health, uptime_s=9000, evidence=["CUDA error 802"])
    assert len({f.code for f in found}) >= 9, [f.code for f in found]
    assert all(f.facts.get("judged_from") for f in found), [
        f.code for f in found if not f.facts.get("judged_from")
    ]
    for ok in (check_health(h200()), check_health(h200(pci=None))):
        assert [f.facts["judged_from"] for f in ok if f.code == "health.ok"]


def test_a_pre_ampere_xid_48_leads_to_its_gpus_pending_page_blacklist() -> None:
    """gpu-operator#1146's Xid 48 on the Azure fixture's second GPU (its bus the only change):
    the GPU retires pages instead of remapping rows, and one is pending."""
    log = pub("xid-48-syslog-gpuop1146-partial.txt").replace("PCI:0000:07:00", "PCI:0002:00:00")
    klog = parse_klog(f"@try journalctl\n{log}\n@end 0 1 1 0")
    gpus = parse_smi_q(pub("q-retired-pages-azurehpc-8x.txt")).gpus
    found = [f for f in check_health(h200(kernel=klog, gpus=gpus)) if f.code == "health.memory_xid"]
    (joined,) = found
    assert joined.title.startswith("GPU 1 (0002:00:00) memory error (Xid 48): a repair is pending")
    assert joined.facts["retired_pages_pending"] is True and joined.facts["retired_pages_dbe"] == 61
