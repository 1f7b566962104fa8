"""The serve state file's parser: the contract's good states read whole; hostile, garbled and
huge files never raise, never read as ready, and never bring a control character through."""

from __future__ import annotations

import json
import time

import pytest

from gpudash.probe.parts import Part
from gpudash.probe.sections import serve
from gpudash.probe.serve import MAX_BYTES, ServeState, parse_state

READY = {
    "schema": 1,
    "task": "serve",
    "engine": "sglang",
    "model": "/models/Qwen3-8B",
    "name": "Qwen3-8B",
    "port": 30000,
    "tp": 8,
    "pid": 1234,
    "pgid": 1234,
    "started": 1733331234.5,
    "updated": 1733331546.5,
    "state": "ready",
    "phase": "listening",
    "phases": {"launch": 0.0, "weights": 41.2, "kv_cache": 60.3, "graph_capture": 75.0},
    "ready": {
        "time_to_ready_s": 312.0,
        "ttft_ms": 41.0,
        "decode_tok_s": 212.4,
        "attention_backend": "flashinfer",
        "flashinfer_jit": True,
        "phases_s": {"weights": 41.2, "kv_cache": 19.1},
    },
    "failure": None,
    "command": ["/v/bin/python", "-m", "sglang.launch_server", "--port", "30000"],
    "log": "/home/u/.cache/gpudash/jobs/serve/log",
}
OOM = {
    **READY,
    "state": "failed",
    "phase": "graph_capture",
    "ready": None,
    "failure": {
        "code": "serve.oom",
        "line": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "lineno": 812,
        "why": "The GPU ran out of memory while capturing CUDA graphs.",
        "fix": "Lower --mem-fraction-static or --cuda-graph-max-bs.",
        "source": "https://github.com/sgl-project/sglang/issues/0000",
    },
}


def test_a_ready_state_is_read_whole_with_its_figures() -> None:
    s = parse_state("serve", json.dumps(READY))
    assert (s.state, s.engine, s.model, s.port, s.tp, s.pid) == (
        "ready", "sglang", "/models/Qwen3-8B", 30000, 8, 1234,
    )  # fmt: skip
    assert s.ready is not None and s.ready.ttft_ms == 41.0 and s.ready.flashinfer_jit is True
    assert s.ready.phases_s == (("weights", 41.2), ("kv_cache", 19.1))
    assert s.phases[2] == ("kv_cache", 60.3) and s.command[2] == "sglang.launch_server"
    assert s.notes == () and s.verdict == "ready"
    assert s.phase_entered() is None  # "listening" has no entry in phases


def test_a_failed_state_keeps_its_cause_and_quoted_line() -> None:
    s = parse_state("serve", json.dumps(OOM).encode())
    assert s.state == "failed" and s.failure is not None
    assert s.failure.code == "serve.oom" and s.failure.lineno == 812
    assert s.failure.line is not None and s.failure.line.startswith("torch.OutOfMemoryError")


def test_a_ready_file_whose_engine_is_gone_reads_as_exited() -> None:
    from dataclasses import replace

    s = replace(parse_state("serve", json.dumps(READY)), alive=False)
    assert s.verdict == "exited"
    assert serve.brief(s, None) == "exited after ready (listening)"


HOSTILE = [
    "",
    "   \n",
    "not json",
    "[1, 2]",
    '"ready"',
    "{" * 100_000,
    "[" * 100_000 + "]" * 100_000,
    '{"state": "ready", "pid": 1e999}',
    '{"state": "READY"}',
    '{"state": ["ready"]}',
    json.dumps({**READY, "pid": 1, "port": 70000, "tp": -8, "started": -5}),
    json.dumps({**READY, "pid": True, "port": "30000", "tp": 2.5, "ttft_ms": "fast"}),
    json.dumps({**READY, "ready": [1], "failure": "oom", "phases": [1, 2], "command": "x"}),
    json.dumps({**READY, "ready": {"ttft_ms": float("nan")}}).replace("NaN", "NaN"),
    json.dumps({**READY, "pid": 10**400}),
    json.dumps({**OOM, "failure": {"code": None, "line": "x"}}),
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_state_files_never_raise_and_never_claim_more_than_they_hold(text: str) -> None:
    s = parse_state("serve", text)
    assert isinstance(s, ServeState)
    assert s.pid is None or 1 < s.pid < 1 << 22
    assert s.port is None or 0 < s.port < 65536
    assert s.tp is None or s.tp >= 0
    if s.ready is not None:
        assert s.ready.ttft_ms is None or s.ready.ttft_ms == s.ready.ttft_ms  # never NaN


def test_an_unknown_state_word_is_unknown_not_ready() -> None:
    assert parse_state("x", '{"state": "READY"}').state == "unknown"
    assert parse_state("x", '{"state": "ready "}').state == "unknown"
    assert parse_state("x", "{}").notes == ("no schema 1 in it: read as schema 1", "no state")


def test_a_huge_state_file_is_refused_quickly_without_reading_it() -> None:
    text = '{"state": "ready", "model": "' + "x" * (4 * MAX_BYTES) + '"}'
    started = time.perf_counter()
    s = parse_state("serve", text)
    assert time.perf_counter() - started < 0.5
    assert s.state == "unknown" and "larger than" in s.notes[0]


def test_control_and_bidi_characters_are_shown_not_obeyed() -> None:
    nasty = "\x1b]52;c;cm0gLXJmIH4=\x07/models/x\u202egpj.exe\x1b[2J\nnext"
    s = parse_state("serve", json.dumps({**OOM, "model": nasty, "failure": {"code": nasty}}))
    for text in (s.model, s.failure.code if s.failure else ""):
        assert text is not None
        assert "\x1b" not in text and "\u202e" not in text and "\n" not in text
        assert "<U+202E>" in text


def test_many_phases_and_words_are_capped() -> None:
    phases = {f"p{i}": float(i) for i in range(1000)}
    s = parse_state("serve", json.dumps({**READY, "phases": phases, "command": ["w"] * 10_000}))
    assert len(s.phases) == 16 and len(s.command) == 64


# --- the section's parse: the host's liveness answers joined to the file they are about ---------


def _part(i: int, head: str, body: str, rc: int | None = 0) -> tuple[str, Part]:
    return f"state.{i}", Part(f"state.{i}", rc, f"{head}json\n{body}")


def test_liveness_is_taken_only_for_the_pid_and_port_the_parser_read() -> None:
    good = json.dumps(READY)
    parts = dict(
        [
            _part(1, "file serve.json\npid 1234 dead\nport 30000 listening\n", good),
            _part(2, "file other.json\npid 999 alive\nport 1 listening\n", good),
            ("files", Part("files", 0, "2")),
            ("clock", Part("clock", 0, "1733331600")),
        ]
    )
    data = serve.parse(parts)
    first, second = data.states
    assert (first.file, first.alive, first.listening, first.verdict) == (
        "serve", False, True, "exited",
    )  # fmt: skip
    assert (second.alive, second.listening, second.verdict) == (None, None, "ready")
    assert data.host_now == 1733331600.0


def test_the_fleet_words_for_each_state() -> None:
    now = READY["started"] + 75.0 + 9 * 60
    ready = parse_state("serve", json.dumps(READY))
    assert serve.brief(ready, now) == "ready 312 s · 41 ms TTFT · 212 tok/s"
    assert serve.brief(parse_state("s", json.dumps(OOM)), now) == "failed: serve.oom"
    stalled = json.dumps({**READY, "state": "stalled", "phase": "graph_capture"})
    assert serve.brief(parse_state("s", stalled), now) == "stalled: graph capture 9m"
    starting = json.dumps({**READY, "state": "starting", "phase": "weights"})
    at = READY["started"] + 41.2 + 120
    assert serve.brief(parse_state("s", starting), at) == "starting: weights 2m"


def test_no_state_dir_and_an_old_capture_differ() -> None:
    none = serve.parse({"files": Part("files", 0, "0"), "clock": Part("clock", 0, "1")})
    assert none.looked and none.states == ()
    assert serve.summary(none).startswith("no served engine")
    assert serve.parse({}).looked is False and serve.summary(serve.parse({})) == "not looked for"


def test_phases_read_in_the_engines_order_whatever_the_files_key_order() -> None:
    """The supervisor writes its JSON with sorted keys: "listening" before "weights"."""
    doc = {**READY, "phases": {"launch": 0.0, "listening": 14.4, "weights": 14.2}}
    doc["ready"] = {
        **READY["ready"],
        "phases_s": {"launch": 14.2, "listening": 5.5, "weights": 0.2},
    }
    state = parse_state("serve", json.dumps(doc, sort_keys=True))
    assert [p for p, _ in state.phases] == ["launch", "weights", "listening"]
    assert state.ready is not None
    assert [p for p, _ in state.ready.phases_s] == ["launch", "weights", "listening"]
