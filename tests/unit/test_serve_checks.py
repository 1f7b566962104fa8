"""The serve findings for each state a served engine can be in, through `run_checks` like every
family; and `stop`'s reading of what its host script printed, hostile lines included."""

from __future__ import annotations

import json
from dataclasses import replace

from gpudash.checks import run_checks
from gpudash.checks.finding import Severity
from gpudash.model import HostResult, HostState, SectionResult
from gpudash.probe.sections.serve import Serve
from gpudash.probe.serve import parse_state
from gpudash.tasks.stop import StopResult, describe, parse_pids, parse_service
from tests.unit.test_serve_state import OOM, READY

NOW = READY["started"] + 75.0 + 9 * 60


def findings(doc: dict, *, alive: bool | None = True, listening: bool | None = True):
    state = replace(parse_state("serve", json.dumps(doc)), alive=alive, listening=listening)
    data = Serve((state,), NOW)
    host = HostResult(
        "h", HostState.READY, sections={"serve": SectionResult("serve", data, None, {}, 0.1)}
    )
    return [f for f in run_checks(host) if f.family == "serve"]


def test_a_ready_engine_is_one_ok_finding_carrying_its_figures() -> None:
    (f,) = findings(READY)
    assert (f.code, f.severity) == ("serve.ready", Severity.OK)
    assert f.title == "serve: sglang Qwen3-8B on :30000 ready 312 s · 41 ms TTFT · 212 tok/s"
    assert f.facts["time_to_ready_s"] == 312.0 and f.facts["decode_tok_s"] == 212.4
    assert f.facts["attention_backend"] == "flashinfer" and f.facts["flashinfer_jit"] is True
    assert f.facts["phases_s"] == {"weights": 41.2, "KV cache": 19.1}


def test_a_classified_failure_keeps_its_code_why_fix_and_quoted_line() -> None:
    (f,) = findings(OOM, alive=False)
    assert (f.code, f.severity) == ("serve.oom", Severity.FAIL)
    assert f.title == "serve: sglang Qwen3-8B on :30000 failed (serve.oom) in graph capture"
    assert f.why.startswith(OOM["failure"]["why"])
    assert f.why.endswith(f'Judged from its log: "{OOM["failure"]["line"]}"')
    assert f.fix == OOM["failure"]["fix"] and f.facts["lineno"] == 812
    assert f.facts["source"] == OOM["failure"]["source"]


def test_stalled_names_its_phase_and_how_long() -> None:
    stalled = {**READY, "state": "stalled", "phase": "graph_capture", "ready": None}
    (f,) = findings(stalled)
    assert (f.code, f.severity) == ("serve.stalled", Severity.FAIL)
    assert f.title.endswith("stalled: graph capture 9m")


def test_ready_with_its_pid_gone_is_exited_and_with_its_port_closed_is_not_listening() -> None:
    (gone,) = findings(READY, alive=False)
    assert (gone.code, gone.severity, gone.fix_task) == ("serve.exited", Severity.FAIL, "serve")
    assert gone.facts["log"] == READY["log"]
    (closed,) = findings(READY, listening=False)
    assert (closed.code, closed.severity) == ("serve.not_listening", Severity.FAIL)


def test_starting_and_stopped_are_info_and_unreadable_a_warning_not_ok() -> None:
    (starting,) = findings({**READY, "state": "starting", "phase": "weights", "ready": None})
    assert (starting.code, starting.severity) == ("serve.starting", Severity.INFO)
    (stopped,) = findings({**READY, "state": "stopped"}, alive=False)
    assert (stopped.code, stopped.severity) == ("serve.stopped", Severity.INFO)
    (unknown,) = findings({"state": "READY"})
    assert (unknown.code, unknown.severity) == ("serve.unreadable", Severity.WARN)
    (no_cause,) = findings({**OOM, "failure": None})
    assert (no_cause.code, no_cause.severity) == ("serve.exited", Severity.FAIL)


def test_no_engine_and_no_look_give_no_serve_finding() -> None:
    for data in (Serve(), Serve(looked=False)):
        host = HostResult(
            "h", HostState.READY, sections={"serve": SectionResult("serve", data, None, {}, 0.1)}
        )
        assert [f for f in run_checks(host) if f.family == "serve"] == []


# --- stop: what its host script printed ---------------------------------------------------------


def test_the_stop_scripts_output_is_read_totally() -> None:
    text = (
        "service 4242\nservice-state stopped\nspid 4242\nspid 4250\n"
        "gpu-held 4250 1024 MiB\x1b[2J\ngpu-held x 5\ngpu checked\nstate-file stopped\n"
    )
    out = parse_service(text, run_pids=3)
    assert (out.state, out.pgid, out.pids, out.state_file) == ("stopped", 4242, (4242, 4250), True)
    assert out.gpu is not None and out.gpu.pids == 5 and out.gpu.held == ((4250, "1024 MiB"),)
    hostile = "\n".join(["spid 1"] * 10_000 + ["service 99999999999", "service-state yes"])
    out = parse_service(hostile + "\x00\ufffd")
    assert out.state == "none" and out.pgid is None and len(out.pids) == 4096 and out.gpu is None
    assert parse_pids("pid 12\npid ²\npid -3\npid 99999999999\nnoise") == (12,)


def test_the_line_said_for_each_outcome() -> None:
    gone = StopResult("h", "serve", "finished", service="gone", service_pgid=7)
    assert describe(gone) == "nothing running (its service group was already gone: record removed)"
    assert not gone.ok and gone.nothing_running
    lost = StopResult("h", "serve", "unknown", error="connection refused\n\x1b[31m")
    said = describe(lost)
    assert said.startswith("not stopped: connection refused") and "\x1b" not in said
    assert "\n" not in said and not lost.ok
    no_smi = parse_service("service 7\nservice-state stopped\nspid 7\ngpu no-smi\n").gpu
    stopped = StopResult("h", "serve", "finished", service="stopped", service_pgid=7,
                         service_pids=1, gpu=no_smi)  # fmt: skip
    assert stopped.ok
    assert describe(stopped) == (
        "service group 7 (1 process) stopped; GPU memory not checked: no nvidia-smi on the host"
    )
