"""The verify result parser (gpudash/probe/verify.py): the real H200 result, and hostile text.

The file is written on the host, so anything may be in it: the parser must never raise, must
stay bounded, and must never turn what it could not read into "ok".
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from gpudash.probe.verify import MAX_BYTES, MAX_GPUS, parse_verify
from tests.support import FIXTURES

VERIFY = FIXTURES / "verify"


def real(name: str = "h200-1x") -> dict:
    return json.loads((VERIFY / f"{name}.json").read_text())


def test_the_real_h200_result_reads_whole():
    r = parse_verify((VERIFY / "h200-1x.json").read_text())
    assert r.status == "ok" and r.notes == ()
    assert r.started == datetime(2026, 12, 3, 20, 33, 7, tzinfo=timezone.utc).timestamp()
    finished = datetime(2026, 12, 3, 20, 33, 13, tzinfo=timezone.utc).timestamp()
    assert r.finished == finished
    assert r.age_s(finished + 3600) == 3600
    assert (r.driver, r.python, r.executable) == (
        "580.159.04",
        "3.12.3",
        "/opt/torch/.venv/bin/python3",
    )
    assert (r.duration_s, r.torch_import_s, r.after_import_s) == (6.42, 4.92, 1.46)
    t = r.torch
    assert (t.import_ok, t.version, t.cuda, t.available, t.device_count) == (
        True, "2.11.0+cu130", "13.0", True, 1,
    )  # fmt: skip
    assert t.arch_list == ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
    (g,) = r.gpus
    assert (g.index, g.name, g.cc, g.arch, g.arch_via) == (0, "NVIDIA H200", "9.0", "sass", "sm_90")
    assert (g.matmul_tflops, g.matmul_ok, g.copy_gbps) == (670.9, True, 4245.6)
    assert (g.h2d_gbps, g.d2h_gbps) == (55.4, 55.2)
    assert (g.pcie_gen_max, g.pcie_width_max, g.bus_id) == (5, 16, "00000000:00:06.0")
    assert r.peer == ((None,),)
    assert r.nccl is None and r.engines == () and r.failures == ()


def test_the_other_real_results_read_as_what_happened():
    notorch = parse_verify((VERIFY / "h200-notorch.json").read_text())
    assert notorch.status == "fail" and notorch.torch.import_ok is False
    assert notorch.torch.error == "ModuleNotFoundError: No module named 'torch'"
    busy = parse_verify((VERIFY / "h200-busy.json").read_text())
    assert busy.status == "refused" and busy.gpus == ()
    assert busy.refused.startswith("other processes hold GPU memory (GPU 0: 2575 MiB)")
    one = parse_verify((VERIFY / "h200-1x-nccl1.json").read_text())
    assert (one.nccl.world, one.nccl.ok, one.nccl.busbw_gbps) == (1, True, 0.0)
    assert one.nccl.nccl_version == "2.28.9"


def test_unreadable_text_is_unknown_never_ok():
    for text in ("", "   ", "not json", "[1, 2]", '"ok"', "null", "{", b"\xff\xfe{}"):
        r = parse_verify(text)
        assert r.status == "unknown", text
        assert r.notes, text
    assert parse_verify('{"status": "ok"}').status == "ok"
    assert parse_verify('{"status": "great"}').status == "unknown"
    assert parse_verify("{}").notes == ("no status",)


def test_oversized_and_deeply_nested_input_is_refused_not_parsed():
    assert parse_verify(" " * (MAX_BYTES + 1)).status == "unknown"
    assert parse_verify(b"{" + b" " * MAX_BYTES + b"}").status == "unknown"
    deep = "[" * 100_000 + "]" * 100_000
    assert parse_verify(deep).status == "unknown"
    assert parse_verify('{"status": "ok", "gpus": ' + deep + "}").status == "unknown"


def test_wrong_types_are_dropped_field_by_field():
    doc = real()
    gpu = doc["gpus"][0]
    gpu.update(
        matmul_tflops="671",  # a string is not a number
        copy_gbps=True,  # nor is a bool
        h2d_gbps=-5,  # nor a negative rate
        d2h_gbps=float("nan"),
        pcie_gen_max=5.5,
        arch="magic",
        name=["NVIDIA H200"],
    )
    doc["torch"]["arch_list"] = "sm_90"
    doc["peer"] = [[True, "yes", None, 1]]
    doc["engines"] = [{"name": 5}, "flashinfer", {"name": "vllm", "import_ok": "no"}]
    doc["failures"] = [1, None, "GPU 3: boom"]
    r = parse_verify(json.dumps(doc))
    (g,) = r.gpus
    assert (g.matmul_tflops, g.copy_gbps, g.h2d_gbps, g.d2h_gbps) == (None, None, None, None)
    assert (g.pcie_gen_max, g.arch, g.name) == (None, None, None)
    assert g.pcie_width_max == 16  # the good fields beside them stay
    assert r.torch.arch_list == ()
    assert r.peer == ((True, None, None, None),)
    assert [(e.name, e.import_ok) for e in r.engines] == [("vllm", None)]
    assert r.failures == ("GPU 3: boom",)
    assert parse_verify('{"status": "ok", "duration_s": Infinity}').duration_s is None


def test_remote_text_is_cleaned_and_cut():
    doc = real()
    doc["gpus"][0]["name"] = "NVIDIA H200\x1b]0;pwned\x07\x1b[31m\n\rX"
    doc["gpus"][0]["error"] = "E" * 10_000
    r = parse_verify(json.dumps(doc))
    name = r.gpus[0].name
    assert "\x1b" not in name and "\n" not in name and "\r" not in name
    assert name.startswith("NVIDIA H200") and name.endswith("X")
    assert len(r.gpus[0].error) == 300


def test_gpu_lists_are_bounded():
    doc = real()
    doc["gpus"] = [dict(doc["gpus"][0], index=i) for i in range(MAX_GPUS + 500)]
    doc["gpus"].insert(0, {"no": "index"})
    r = parse_verify(json.dumps(doc))
    assert len(r.gpus) == MAX_GPUS - 1  # the bad first entry counted against the cap
    assert any("only the first" in n for n in r.notes)
    assert any("could not be read" in n for n in r.notes)


def test_an_unknown_time_gives_no_age():
    r = parse_verify('{"status": "ok", "finished": "yesterday"}')
    assert r.finished is None and r.age_s(2e9) is None
    naive = parse_verify('{"status": "ok", "finished": "2026-12-03T20:00:00"}')
    assert naive.finished == datetime(2026, 12, 3, 20, tzinfo=timezone.utc).timestamp()
