"""The kernel log, read in every format and bounded however long: real Xid lines (sources in
tests/fixtures/public/health/SOURCES.md), bursts of them, and the probe's `klog` part as the
section's shell writes it (`@try`, `@rep`, `@end`, `@none`)."""

from __future__ import annotations

import pytest

from gpudash.checks import Severity
from gpudash.checks.facts import xid as xid_facts
from gpudash.checks.health import check_health
from gpudash.probe.kernel_log import LOW_XIDS, MAX_KEYS, MAX_LOW_KEYS, parse_kernel_log
from gpudash.probe.sections.health import parse_klog
from tests.support import FIXTURES
from tests.unit.test_health import codes, h200, pub

PREFIXED = pub("xid-119-varied-prefixes.txt").splitlines()
BURST_13 = pub("xid-dmesg-ctime-13-109.txt").splitlines()[1]  # a real Xid 13 line (gpud#46)
XID_43 = "[Fri Aug 30 11:44:02 2024] NVRM: Xid (PCI:0000:cb:00): 43, pid=1797828, name=pt_main_thread, Ch 00000008"  # noqa: E501  (the 109 line of gpud#46 with its Xid set to 43)


@pytest.mark.parametrize("line", PREFIXED, ids=[x.split(" NVRM:")[0] or "cat" for x in PREFIXED])
def test_an_xid_is_read_behind_every_prefix_dmesg_and_journalctl_print(line: str) -> None:
    """dmesg raw / -T / --time-format iso / -x / -r, journalctl short / short-iso /
    short-precise / short-monotonic / cat, syslog and talosctl: the same Xid 119, its GPU, its
    process and its timestamp as printed."""
    (e,) = parse_kernel_log(line).xids
    assert (e.xid, e.bus, e.pid, e.process) == (119, "0000:9b:00", 4071838, "python")
    assert e.when == line.split("NVRM:")[0].strip()[:60]
    assert "GSP" in e.text


def test_every_format_of_one_gpus_xid_119_is_one_counted_gsp_fail_with_its_fix() -> None:
    klog = parse_klog("@try dmesg\n" + "\n".join(PREFIXED) + "\n@end 0 17 17 0")
    (e,) = klog.xids
    assert e.count == len(PREFIXED) == 17
    f = next(x for x in check_health(h200(kernel=klog)) if x.code == "health.xid_119")
    assert f.severity is Severity.FAIL and "(x17)" in f.title
    assert "NVreg_EnableGpuFirmware=0" in f.fix and "Reset the GPU" in f.fix
    assert f.facts["workaround_source"] == xid_facts.GSP_SOURCE
    assert f.facts["judged_from"] == "kernel log (dmesg)"


def test_xid_120_in_a_real_raw_dmesg_is_a_gsp_fail() -> None:
    klog = parse_klog("@try dmesg\n" + pub("xid-120-gsp-dmesg-829.txt") + "\n@end 0 6 6 0")
    f = next(x for x in check_health(h200(kernel=klog)) if x.code == "health.xid_120")
    assert f.severity is Severity.FAIL and "NVreg_EnableGpuFirmware=0" in f.fix
    assert f.facts["last"].startswith("GSP task exception: store access page fault")


def test_a_burst_of_500_xid_13_keeps_the_later_xid_43_and_the_earlier_xid_79() -> None:
    """The old probe kept the last 400 NVRM lines: the Xid 79 before a burst was lost. Now
    every (GPU, Xid) is one counted entry, in bounded memory, whatever the burst."""
    log = "\n".join(
        [pub("xid-journal-79-rtx5080.txt").splitlines()[1]] + [BURST_13] * 500 + [XID_43]
    )
    events = parse_kernel_log(log)
    assert [(e.xid, e.count) for e in events.xids] == [(79, 1), (13, 500), (43, 1)]
    burst = events.xids[1]
    assert burst.first_when == burst.when == "[Fri Aug 30 11:43:09 2024]"
    found = codes(check_health(h200(kernel=parse_klog(f"@try dmesg\n{log}\n@end 0 502 502 0"))))
    assert found["health.xid_79"] is Severity.FAIL and "health.xid_43" in found
    assert "health.kernel_log_unreadable" not in found


def test_the_probes_rep_marker_stands_for_the_lines_it_left_out() -> None:
    klog = parse_klog(f"@try dmesg\n{BURST_13}\n@rep 499\n{BURST_13}\n{XID_43}\n@end 0 9000 501 0")
    assert [(e.xid, e.count) for e in klog.xids] == [(13, 500), (43, 1)]
    assert klog.source == "dmesg" and not klog.truncated


def test_a_flood_of_application_xids_never_takes_the_room_of_a_hardware_xid() -> None:
    """Distinct (GPU, Xid) keys are capped in two pools: the catalog's application faults in
    their own, so 10,000 distinct Xid 13 GPUs leave room for the Xid 79 after them, and what
    found no room is counted, not silent."""
    flood = [f"NVRM: Xid (PCI:{i:04x}:01:00): 13, x" for i in range(10_000)]
    lost = [f"NVRM: Xid (PCI:{i:04x}:02:00): 62, x" for i in range(MAX_KEYS + 5)]
    events = parse_kernel_log("\n".join([*flood, "NVRM: Xid (PCI:0000:2b:00): 79, off", *lost]))
    assert sum(e.xid == 13 for e in events.xids) == MAX_LOW_KEYS
    assert any(e.xid == 79 for e in events.xids)
    assert events.dropped == 10_000 - MAX_LOW_KEYS + 6  # the 79 took one hardware slot
    klog = parse_klog("@try dmesg\n" + "\n".join(flood[:70]) + "\n@end 0 70 70 0")
    assert klog.truncated and klog.dropped == 70 - MAX_LOW_KEYS
    assert codes(check_health(h200(kernel=klog)))["health.kernel_log_truncated"] is Severity.WARN


def test_fatal_and_nonfatal_nvlink5_xids_of_one_gpu_are_kept_apart() -> None:
    fatal = "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x0)"
    nonfatal = "NVRM: Xid (PCI:0019:01:00): 149, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2)"
    events = parse_kernel_log("\n".join([fatal, nonfatal, nonfatal]))
    assert [(e.xid, e.count, "Fatal" in e.text) for e in events.xids] == [
        (149, 1, True),
        (149, 2, False),
    ]


def test_the_low_pool_is_the_catalogs_application_faults() -> None:
    """The probe may not import checks, so it holds its own copy: it must not drift."""
    expected = {
        code
        for code, row in xid_facts.CATALOG.items()
        if row.action in xid_facts._INFO_ACTIONS and code != 94
    }
    assert expected == LOW_XIDS


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("@none awk: not found (the kernel log is filtered with awk)", "awk: not found"),
        ("@none neither dmesg nor journalctl is on PATH", "neither dmesg nor journalctl"),
        ("awk: not found", "awk: not found"),  # an older probe's klog part
        ("", "printed nothing"),  # an older probe on a host with neither reader
    ],
)
def test_a_host_without_a_reader_is_not_read_never_nothing_wrong(text: str, why: str) -> None:
    """The old parser called these "pasted" logs and said "nothing wrong in kernel log
    (pasted)"."""
    klog = parse_klog(text)
    assert klog.source is None and why in klog.why_unreadable
    found = check_health(h200(kernel=klog))
    unreadable = next(f for f in found if f.code == "health.kernel_log_unreadable")
    assert unreadable.severity is Severity.INFO and why in unreadable.title
    ok = next(f for f in found if f.code == "health.ok")
    assert "kernel log" not in ok.title.split("(not read")[0]
    assert "not read: kernel log" in ok.title


def test_a_pasted_raw_log_is_still_read() -> None:
    klog = parse_klog(pub("xid-journal-79-rtx5080.txt"))
    assert klog.source == "pasted" and [e.xid for e in klog.xids] == [79]


def test_an_older_captures_klog_part_still_parses() -> None:
    """Saved replays hold `@end RC LINES NVRM` (three fields) and no `@rep`."""
    saved = (
        FIXTURES / "h200-device" / "health" / "save-smi" / "h200" / "health.klog.txt"
    ).read_text()
    klog = parse_klog(saved)
    assert klog.source == "dmesg" and klog.lines_read and not klog.truncated


def test_nvrm_lines_without_an_xid_are_no_xid_in_any_prefix() -> None:
    """talosctl's prefix carries a bracketed ISO stamp and colons (open-gpu-kernel-modules#446);
    the H200's own lines in eight dmesg formats: none is read as an Xid."""
    talos = pub("talos-kern-warning-nvrm-446-partial.txt")
    formats = (FIXTURES / "h200-device" / "health" / "raw" / "dmesg_formats.txt").read_text()
    for text in (talos, formats):
        events = parse_kernel_log(text)
        assert events.xids == () and events.fallen_off == () and events.dropped == 0
