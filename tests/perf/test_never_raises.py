"""Every parser and reader is total: generated input (hypothesis) never makes one raise, and
a task log reads the same however its stream was cut. Moved here from tests/unit (issue 30:
the unit tier runs in seconds; these examples took most of it), each test as it was.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from gpudash.checks.health import check_health
from gpudash.probe.arch import arch_for_cc, cc_from_name
from gpudash.probe.nvcc import parse_nvcc
from gpudash.probe.nvlink import parse_nvlink
from gpudash.probe.parts import Part
from gpudash.probe.query import number, parse_query
from gpudash.probe.sections import health as section
from gpudash.probe.smi import parse_smi
from gpudash.probe.tools import KINDS, parse_tool
from gpudash.probe.topo import parse_topo
from gpudash.probe.verify import VerifyResult, parse_verify
from gpudash.tasks.logs import LineAssembler, Masker
from gpudash.text import clean

# --- from tests/unit/test_parse_smi.py


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_smi_never_raises_on_arbitrary_text(text: str) -> None:
    parse_smi(text).to_json()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["|", "+----+", "\n", "   0  NVIDIA H200   On  ", "ERR!", "N/A",
                         "MIG devices:", "Processes:", "GPU  Name", "78W / 700W", "0MiB / 1MiB",
                         "NVIDIA-SMI 1 Driver Version: 2 CUDA Version: 3", "\x00", "\x1b[0m"]),
        max_size=60,
    ).map("".join)
)  # fmt: skip
def test_smi_never_raises_on_table_like_noise(text: str) -> None:
    parse_smi(text).to_json()


# --- from tests/unit/test_parse_nvlink.py


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_nvlink_never_raises_on_arbitrary_text(text: str) -> None:
    parse_nvlink(text).to_json()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["GPU 0: X (UUID: ", ")", "\n", "Link 1: ", "26.562 GB/s", "<inactive>",
                         "all links are inActive", "GPU ", ":", "\x1b", "...."]),
        max_size=40,
    ).map("".join)
)  # fmt: skip
def test_nvlink_never_raises_on_nvlink_like_noise(text: str) -> None:
    parse_nvlink(text).to_json()


# --- from tests/unit/test_parse_query.py


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300),
       st.none() | st.lists(st.text(max_size=10), max_size=5))  # fmt: skip
def test_query_never_raises_on_arbitrary_text(value: str, fields: list[str] | None) -> None:
    parse_query(value, fields).to_json()
    number(value)


# --- from tests/unit/test_parse_nvcc_arch.py


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_nvcc_and_arch_never_raise_on_arbitrary_text(text: str) -> None:
    parse_nvcc(text).to_json()
    arch_for_cc(text)
    cc_from_name(text)


# --- from tests/unit/test_parse_topo.py


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_topo_never_raises_on_arbitrary_text(text: str) -> None:
    parse_topo(text).to_json()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["GPU0", "GPU1", "NIC0", "\t", " ", "X", "NV18", "SYS", "\n", "N/A",
                         "CPU Affinity", "\x1b[4m", "0-15", "NIC Legend:", "NIC0: mlx5_0"]),
        max_size=60,
    ).map("".join)
)  # fmt: skip
def test_topo_never_raises_on_matrix_like_noise(text: str) -> None:
    parse_topo(text).to_json()


# --- from tests/unit/test_parse_tools.py


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KINDS), st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_parse_tool_never_raises_for_a_known_kind(kind: str, text: str) -> None:
    json.dumps(parse_tool(kind, text))


# --- from tests/unit/test_health.py


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["klog", "smiq", "pci", "fm", "fmver", "rdma", "shm",
                                        "memlock", "procs"]),
                       st.text(max_size=300), max_size=9), st.integers(-1, 2))  # fmt: skip
def test_the_health_parser_is_total(texts, rc) -> None:
    parts = {k: Part(k, rc if rc >= 0 else None, v) for k, v in texts.items()}
    check_health(section.parse(parts))


# --- from tests/unit/test_verify_result.py


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_raising(text):
    assert isinstance(parse_verify(text), VerifyResult)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


_keys = st.sampled_from(
    ["status", "gpus", "torch", "nccl", "engines", "peer", "failures", "finished", "index",
     "matmul_tflops", "name", "arch_list", "world", "busbw_gbps", "import_ok", "error"]
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_keys, _json, max_size=8), st.lists(st.dictionaries(_keys, _json)))
def test_any_json_shape_parses_without_raising(doc, gpus):
    doc = {**doc, "gpus": gpus} if gpus else doc
    result = parse_verify(json.dumps(doc))
    assert result.status in ("ok", "fail", "refused", "unknown")


# --- from tests/unit/test_tasks_spec.py


def _lines_one_by_one(data: bytes) -> list[str]:
    """The meaning of a task's output, line by line: a `\\r` followed by more text starts
    its line over; each finished line is cleaned and masked on its own."""
    mask = Masker(["s3cret"])
    out = []
    lines = data.decode("utf-8", errors="replace").split("\n")
    for i, line in enumerate(lines):
        kept = ""
        for piece in line.split("\r"):
            kept = piece or kept
        if i < len(lines) - 1 or kept:  # an unfinished last line counts once it has text
            out.append(mask(clean(kept)))
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "é", "\r", "\n", "\r\n", "\x1b]0;t", "\x07", "\x1b[1m", "s3cret"])
    ),
    st.lists(st.integers(min_value=1, max_value=7)),
)
def test_a_log_reads_the_same_however_the_stream_was_cut(pieces, cuts) -> None:  # type: ignore[no-untyped-def]
    data = "".join(pieces).encode()
    asm = LineAssembler(Masker(["s3cret"]))
    got, at = [], 0
    for n in cuts:
        got += asm.feed(data[at : at + n])
        at += n
    got += asm.feed(data[at:], final=True)
    assert got == _lines_one_by_one(data)
