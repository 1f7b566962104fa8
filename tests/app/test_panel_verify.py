"""The Verify panel's text over the real H200 result and an edited 8-GPU copy of it, at the
widths the app must read well at (100 and 80 columns)."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from gpudash.probe.sections.verify import VerifySection
from gpudash.probe.verify import parse_verify
from gpudash.ui.panels.verify import VerifyPanel
from tests.support import FIXTURES

REAL = (FIXTURES / "verify" / "h200-1x.json").read_text()


def text(section: VerifySection, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(VerifyPanel().body(section))
    return console.export_text()


def eight() -> VerifySection:
    doc = json.loads(REAL)
    doc["gpus"] = [dict(doc["gpus"][0], index=i) for i in range(8)]  # edit: 8 copies of GPU 0
    doc["gpus"][5]["matmul_tflops"] = 402.5  # edit: GPU 5 at 60 %
    doc["nccl"] = {"world": 8, "bytes": 1 << 30, "ok": True, "busbw_gbps": 370.0, "time_ms": 5.1}
    error = "ImportError: undefined symbol: _ZN3c1021throwNullDataPtrErrorEv"  # flashinfer#382
    doc["engines"] = [
        {"name": "flashinfer", "version": "0.1.6", "import_ok": False, "error": error}
    ]
    result = parse_verify(json.dumps(doc))
    return VerifySection(result, result.finished + 120)


def test_the_real_h200_result_reads_as_a_table_with_its_age():
    result = parse_verify(REAL)
    lines = text(VerifySection(result, result.finished + 3700)).splitlines()
    assert lines[0].split() == ["ok", "1", "h", "ago", "torch", "2.11.0+cu130", "(CUDA", "13.0)",
                                "driver", "580.159.04"]  # fmt: skip
    assert lines[1].split() == ["GPU", "name", "TFLOP/s", "copy", "GB/s", "H2D/D2H", "status"]
    assert lines[2].split() == ["0", "NVIDIA", "H200", "671", "4246", "55.4/55.2", "ok"]
    assert lines[3] == "engines: none installed (FlashInfer, sgl-kernel, vLLM)"


@pytest.mark.parametrize("width", [100, 80])
def test_eight_gpus_show_the_slow_one_the_all_reduce_and_the_failed_engine(width):
    lines = text(eight(), width).splitlines()
    assert all(len(line) <= width for line in lines)
    rows = [line.split() for line in lines[2:10]]
    assert [r[0] for r in rows] == [str(i) for i in range(8)]
    assert " ".join(rows[5][-4:]) == "slow: -40% vs peers"
    assert all(r[-1] == "ok" for i, r in enumerate(rows) if i != 5)
    assert lines[10].startswith("all-reduce over 8 GPUs: busbw 370 GB/s")
    assert "flashinfer 0.1.6 failed: ImportError: undefined symbol" in " ".join(lines[11:])


def test_not_run_and_no_torch_and_refused_each_say_so():
    assert text(VerifySection(None)).strip() == (
        "not run here: b, then V, runs verify (kernels, copies, all-reduce)"
    )
    notorch = parse_verify((FIXTURES / "verify" / "h200-notorch.json").read_text())
    assert text(VerifySection(notorch)).splitlines()[1] == (
        "torch does not import in /usr/bin/python3: ModuleNotFoundError: No module named 'torch'"
    )
    busy = parse_verify((FIXTURES / "verify" / "h200-busy.json").read_text())
    assert "other processes hold GPU memory (GPU 0: 2575 MiB)" in text(VerifySection(busy))
