"""The GPUs panel's health column (issue 19 item 8): per GPU the worst of what the health
section read for it, matched by PCI bus id, from real captures.

The healthy baseline is the real H200 (tests/fixtures/h200-1x/q.txt, and the app replaying
its whole probe, tests/fixtures/h200-device/health/save-smi/h200); the faults are public
captures (tests/fixtures/public/health, sources in SOURCES.md) or that H200's `-q` with one
line edited, as tests/unit/test_health.py does.
"""

from __future__ import annotations

from dataclasses import replace

from gpudash.probe.hostfacts import parse_pci
from gpudash.probe.sections.gpus import Gpu
from gpudash.probe.sections.health import Health, KernelLog, parse_klog
from gpudash.probe.smiq import parse_smi_q
from gpudash.ui import create_app
from gpudash.ui.panels.base import Panel
from gpudash.ui.panels.gpus import health_cell
from tests.app.test_app import (
    SIZE,
    drawn_lines,
    gpu_rows,
    replay_config,
    replay_host,
    settled,
    until,
)
from tests.support import FIXTURES

H200_Q = (FIXTURES / "h200-1x" / "q.txt").read_text()
PUB = FIXTURES / "public" / "health"
H200_REPLAY = FIXTURES / "h200-device" / "health" / "save-smi" / "h200"


def gpu(bus: str | None = "00000000:00:06.0", ecc: int | None = 0) -> Gpu:
    return Gpu(index=0, name="NVIDIA H200", bus_id=bus, ecc_uncorrected=ecc)


def health(q: str = H200_Q, klog: KernelLog | None = None, pci: str | None = None) -> Health:
    report = parse_smi_q(q)
    return Health(
        driver_version=report.driver_version,
        gpus=report.gpus,
        unreachable=report.unreachable,
        kernel=klog or KernelLog("dmesg", None, 600),
        pci=parse_pci(pci) if pci is not None else None,
    )


def edited(old: str, new: str) -> str:
    assert old in H200_Q
    return H200_Q.replace(old, new, 1)


def test_the_real_h200_reads_ok_and_a_missing_section_reads_unknown_not_ok() -> None:
    assert health_cell(gpu(), health()).plain == "ok"
    assert health_cell(gpu(), None).plain == "–"  # not arrived: unknown
    assert health_cell(gpu(bus="00000000:17:00.0"), health()).plain == "–"  # not in its -q
    assert health_cell(gpu(ecc=2), None).plain == "ECC 2"  # the GPU list's own count


def test_each_fault_is_named_in_a_word_or_two_worst_first() -> None:
    width = edited(
        "                Current                                : 16x",
        "                Current                                : 8x",
    )
    pending = edited(
        "        Pending                                        : No",
        "        Pending                                        : Yes",
    )
    failed = edited(
        "Remapping Failure Occurred                     : No",
        "Remapping Failure Occurred                     : Yes",
    )
    assert health_cell(gpu(), health(width)).plain == "x8/x16"
    assert health_cell(gpu(), health(pending)).plain == "remap pending"
    assert health_cell(gpu(), health(failed)).plain == "remap FAILED"
    # A public capture: HW Slowdown and HW Power Brake both active on the GPU at 0E:00.
    slow = health((PUB / "q-performance-varied-hw-slowdown.txt").read_text())
    cell = health_cell(gpu(bus="00000000:0E:00.0"), slow)
    assert cell.plain == "HW slow +1" and "yellow" in str(cell.style)


def test_an_xid_in_the_kernel_log_marks_its_gpu_only_by_catalog_severity() -> None:
    # journalctl's Xid 79 at 0000:2b:00 (an RTX 5080 report), beside the H200's -q moved there.
    log = parse_klog(
        "@try dmesg\n" + (PUB / "xid-journal-79-rtx5080.txt").read_text() + "\n@end 0 900 3"
    )
    moved = H200_Q.replace("00000000:00:06.0", "00000000:2B:00.0")
    cell = health_cell(gpu(bus="00000000:2B:00.0"), health(moved, log))
    assert cell.plain == "Xid 79" and "red" in str(cell.style)
    assert health_cell(gpu(), health(klog=log)).plain == "ok"  # another GPU's Xid
    app_fault = parse_klog(
        "@try dmesg\n[ 1.0] NVRM: Xid (PCI:0000:00:06): 13, pid=7, name=python, x\n@end 0 5 1"
    )
    cell = health_cell(gpu(), health(klog=app_fault))
    assert cell.plain == "Xid 13" and "dim" in str(cell.style)  # info: the app's fault


def test_a_gpu_nvidia_smi_cannot_reach_is_lost() -> None:
    q = (
        "Unable to determine the device handle for GPU0000:00:06.0: Unknown Error\n"
        + H200_Q.split("GPU 00000000:00:06.0")[0]
    )
    h = health(q, pci="0000:00:06.0 0x030200 nvidia")
    assert health_cell(gpu(), h).plain == "lost"


async def test_the_real_h200_replayed_shows_ok_in_its_gpu_row() -> None:
    app = create_app(replace(replay_config(), hosts=(replay_host("h200", H200_REPLAY),)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        rows = gpu_rows(app)
        assert len(rows) == 1 and rows[0].split()[-1] == "ok"


async def test_the_panel_redraws_when_only_the_health_section_arrives() -> None:
    """The GPUs section first, health later (as on a live host): the GPU row's cell turns
    from unknown to ok with the GPUs section's result object unchanged."""
    app = create_app(replace(replay_config(), hosts=(replay_host("h200", H200_REPLAY),)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app))
        full = app.results["h200"]
        early = replace(full, sections={k: v for k, v in full.sections.items() if k != "health"})
        app.host_view.show(early)
        await pilot.pause()
        assert gpu_rows(app)[0].split()[-1] == "–"
        app.host_view.show(full)
        await pilot.pause()
        assert gpu_rows(app)[0].split()[-1] == "ok"


async def test_at_80x24_a_long_cell_wraps_under_itself_whole_never_cut() -> None:
    pending = edited(
        "        Pending                                        : No",
        "        Pending                                        : Yes",
    )
    app = create_app(replace(replay_config(), hosts=(replay_host("h200", H200_REPLAY),)))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, settled(app))
        full = app.results["h200"]
        sick = replace(full.sections["health"], data=health(pending))
        app.host_view.show(replace(full, sections={**full.sections, "health": sick}))
        await pilot.pause()
        lines = drawn_lines(app.query_one("#panel-gpus", Panel).text)
        row = next(i for i, line in enumerate(lines) if line.startswith("0 H200"))
        assert lines[row].split()[-1] == "remap" and lines[row + 1].split() == ["pending"]
        assert not any("…" in line for line in lines)


def test_the_health_panel_counts_every_xid_line_of_a_burst_not_its_kinds() -> None:
    """A burst is kept as one entry with its count (bounded memory); the panel must still say
    how many Xid lines the GPU logged, not how many kinds."""
    from gpudash.ui.panels.health import host_line

    lines = [
        f"[ {100 + i}.0] NVRM: Xid (PCI:0000:00:06): 13, pid=42, Graphics Exception"
        for i in range(500)
    ]
    klog = parse_klog("\n".join(lines) + "\n")
    assert sum(e.count for e in klog.xids) == 500 and len(klog.xids) < 500
    data = health(klog=klog)
    assert "500 Xid" in host_line(data).plain
