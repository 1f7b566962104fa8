"""Serve's preflight from the probe: the saved captures of tests/fixtures/saved (real CLI
output, GPU tools from public captures) with one fact changed where a case needs it, and the
kind's prepare refusing before anything launches."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpudash.model import HostResult, HostState, SectionResult
from gpudash.probe.hostfacts import FabricManager
from gpudash.probe.registry import section
from gpudash.probe.sections.env import Venv
from gpudash.saved import load_host
from gpudash.serve.preflight import plan
from gpudash.tasks.facts import Facts, PrepareError
from gpudash.tasks.prepare import prepare
from gpudash.tasks.spec import load_tasks
from tests.support import FIXTURES

SAVED = FIXTURES / "saved"
SGLANG = {"engine": "sglang", "venv": "~/venvs/serve", "model": "/models/qwen", "tp": "auto"}


def saved(host: str) -> HostResult:
    """A saved probe parsed as the app parses it."""
    sections = {}
    for name, (_rc, error, parts) in load_host(SAVED / host).sections.items():
        sections[name] = SectionResult(name, section(name).parse(parts), error, parts, 0.0)
    return HostResult(host, HostState.READY, sections=sections)


def with_data(result: HostResult, name: str, **changes: object) -> HostResult:
    sections = dict(result.sections)
    old = sections[name]
    sections[name] = dataclasses.replace(old, data=dataclasses.replace(old.data, **changes))
    return dataclasses.replace(result, sections=sections)


def lines(result: HostResult | None, **params: object) -> list[str]:
    return [r.line for r in plan(result, {**SGLANG, **params}).refusals]


def test_tp_auto_is_the_gpus_the_probe_sees_and_device_follows():
    p = plan(saved("dgx-h200"), SGLANG)
    assert (p.tp, p.device, p.name, p.refusals) == (8, "cuda", "qwen", ())
    cpu = plan(saved("no-gpu"), {**SGLANG, "engine": "transformers", "device": "auto"})
    assert (cpu.tp, cpu.device, cpu.name, cpu.refusals) == (1, "cpu", "/models/qwen", ())


def test_a_tp_above_the_gpus_seen_is_refused():
    assert lines(saved("dgx-h200"), tp=16) == [
        "serve.tp: tp 16 (the probe sees 8 GPUs); fix: set tp <= 8"
    ]


def test_sglang_on_a_host_without_gpus_is_refused_and_transformers_is_not():
    (line,) = lines(saved("no-gpu"))
    assert line.startswith("serve.arch: sglang needs an NVIDIA GPU (the probe found none: ")
    assert lines(saved("no-gpu"), engine="transformers", device="auto") == []


def test_other_processes_holding_gpu_memory_are_named():
    # pcie-a40's nvidia-smi table (a public capture) lists pid 2111354 with 818 MiB on GPU 2
    (line,) = lines(saved("pcie-a40"))
    assert line == (
        "serve.gpu_busy: other processes hold GPU memory: pid 2111354 ...eratornet/venv/bin/"
        "python (818 MiB on GPU 2) (the engine sizes its KV cache from free memory and fails"
        " or runs out); fix: stop them (an earlier server: gpudash stop serve HOST), then"
        " launch again"
    )


def test_a_venv_torch_built_for_a_newer_cuda_than_the_driver_runs_is_refused():
    # pcie-a40: driver 525.60.13 (CUDA 12.0); a torch cu130 wheel needs a 580 driver
    venv = Venv("/root/venvs/serve", "3.12", {"torch": "2.9.1+cu130"}, torch_cuda="13.0")
    host = with_data(saved("pcie-a40"), "gpus", processes=())
    host = with_data(host, "env", venvs=(venv,))
    (line,) = lines(host)
    assert line.startswith(
        "serve.driver: torch 2.9.1+cu130 in /root/venvs/serve is built for CUDA 13.0 (the"
        " driver cannot run it: "
    )
    assert lines(host, venv="/other/venv") == []  # another venv: nothing known against it


def test_a_fabric_manager_that_failed_on_an_nvswitch_board_is_refused():
    # the unit as public/health/systemctl-fabricmanager-version-mismatch.txt shows it
    failed = FabricManager("failed", "failed", "550.127.05", "550.120")
    host = with_data(saved("dgx-h200"), "health", fabric_manager=failed)
    (line,) = lines(host)
    assert line.startswith("serve.fabric: nvidia-fabricmanager is failed on an NVSwitch board")
    running = FabricManager("active", "running", "580.159.04", None)
    assert lines(with_data(host, "health", fabric_manager=running)) == []


def test_a_hub_id_without_an_hf_token_is_refused_unless_one_travels_with_the_task():
    host = saved("dgx-h200")
    (line,) = lines(host, model="meta-llama/Llama-3.1-8B-Instruct")
    assert line.startswith("serve.model_access: meta-llama/Llama-3.1-8B-Instruct is a hub id")
    ok = plan(host, {**SGLANG, "model": "meta-llama/Llama-3.1-8B-Instruct"}, token_here=True)
    assert ok.refusals == () and ok.name == "Llama-3.1-8B-Instruct"
    assert lines(with_data(host, "network", hf_token=True), model="org/m") == []


def test_without_a_probe_result_nothing_is_refused_and_tp_comes_from_the_facts():
    p = plan(None, SGLANG, gpus_seen=4)
    assert (p.tp, p.refusals) == (4, ())
    assert any("checked on the host at launch" in n for n in p.notes)


def test_the_kind_refuses_in_prepare_and_ships_the_supervisor_otherwise():
    spec = load_tasks({"serve": {"params": {"model": "/models/qwen"}}})["serve"]
    busy = saved("pcie-a40")
    with pytest.raises(PrepareError, match=r"^serve: serve.gpu_busy: other processes hold"):
        prepare(spec, Facts.from_result(busy), environ={})
    prepared = prepare(spec, Facts.from_result(saved("dgx-h200")), environ={})
    assert "export GPUDASH_TP=8\n" in prepared.script
    assert "export GPUDASH_ENGINE=sglang\n" in prepared.script
    assert "export GPUDASH_READY_TIMEOUT=1800.0\n" in prepared.script
    assert (
        "# engine: '~/venvs/serve/bin/python' -m sglang.launch_server --model-path /models/qwen"
        " --tp 8 --host 127.0.0.1 --port PORT --served-model-name qwen\n"
    ) in prepared.script
    serve_dir = Path(__file__).resolve().parents[2] / "gpudash" / "serve"
    assert prepared.files["supervisor.py"] == (serve_dir / "supervisor.py").read_text()
    assert {"engine_run.py", "ladder.py", "ready.py", "command.py"} <= set(prepared.files)
    assert "preflight.py" not in prepared.files  # it imports gpudash: it never travels
    assert (spec.key, spec.kind, spec.secrets) == ("S", "serve", ("HF_TOKEN",))


def test_a_hub_id_is_refused_where_the_probe_could_not_reach_the_hub():
    spec = load_tasks({"serve": {"params": {"model": "Qwen/Qwen3-0.6B"}}})["serve"]
    offline = Facts(sites=(("huggingface.co", False, "name resolution failed"),))
    with pytest.raises(PrepareError) as refused:
        prepare(spec, offline, environ={"HF_TOKEN": "x"})
    assert str(refused.value) == (
        "serve: cannot reach huggingface.co: name resolution failed (the probe's network"
        " check): serve a folder on the host instead (gpudash run model HOST downloads one)"
    )
    folder = load_tasks({"serve": {"params": {"model": "/models/qwen"}}})["serve"]
    assert prepare(folder, offline, environ={}).script  # a folder needs no Hub
