"""The engine's command lines exactly as issue 29 writes them, and their shown form."""

from __future__ import annotations

import shlex

import pytest

from gpudash.serve.command import argv, default_name, shown

V = "/home/u/venvs/serve"


def test_sglang_is_launched_as_its_users_launch_it():
    extra = ["--mem-fraction-static", "0.8"]
    assert argv("sglang", V, "/models/Qwen3-8B", port=30000, tp=8, args=extra) == [
        f"{V}/bin/python", "-m", "sglang.launch_server", "--model-path", "/models/Qwen3-8B",
        "--tp", "8", "--host", "127.0.0.1", "--port", "30000",
        "--served-model-name", "Qwen3-8B", "--mem-fraction-static", "0.8",
    ]  # fmt: skip


def test_vllm_is_launched_with_its_serve_command():
    assert argv("vllm", V + "/", "Qwen/Qwen3-8B", port=30001, tp=2, name="q") == [
        f"{V}/bin/vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2",
        "--host", "127.0.0.1", "--port", "30001", "--served-model-name", "q",
    ]  # fmt: skip


def test_transformers_takes_the_model_positionally_and_has_no_served_name():
    assert argv("transformers", V, "/m/tiny", port=30002, tp=4, name="ignored", device="cpu") == [
        f"{V}/bin/transformers", "serve", "/m/tiny", "--host", "127.0.0.1", "--port", "30002",
        "--device", "cpu",
    ]  # fmt: skip
    assert default_name("transformers", "/m/tiny") == "/m/tiny"
    assert default_name("sglang", "/m/tiny/") == "tiny"


def test_the_shown_command_is_shell_quoted_and_splits_back_to_the_same_argv():
    command = argv("sglang", "/v w", "/m/it's", port=1, args=["--x", "a;b $(c)"])
    text = shown(command)
    assert "'a;b $(c)'" in text
    assert shlex.split(text) == command


def test_an_unknown_engine_is_an_error_naming_the_engines():
    with pytest.raises(ValueError, match="sglang, vllm, transformers"):
        argv("tgi", V, "/m", port=1)
