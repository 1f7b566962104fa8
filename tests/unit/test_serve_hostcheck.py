"""The supervisor's checks on the host at launch: real sockets, real folders, real PATH."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from gpudash.serve import hostcheck


def test_a_listening_port_is_not_free_and_its_holder_is_named():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert not hostcheck.port_free(port)
        assert hostcheck.port_holder(port).startswith(f"pid {os.getpid()} (")
        assert hostcheck.first_free_port(port) not in (None, port)
    assert hostcheck.port_free(port)


def test_a_model_folder_needs_config_and_weights(tmp_path: Path):
    assert hostcheck.model(str(tmp_path / "none"), 1) == [
        f"serve.model_access: no folder {tmp_path / 'none'}; fix: download it (the model task)"
    ]
    (found,) = hostcheck.model(str(tmp_path), 1)[:1]
    assert found == f"serve.model_access: {tmp_path} has no config.json; fix: download it again"
    (tmp_path / "config.json").write_text(json.dumps({"num_attention_heads": 12}))
    (tmp_path / "model.safetensors").write_bytes(b"x")
    assert hostcheck.model(str(tmp_path), 4) == []
    assert hostcheck.model("Qwen/Qwen3-8B", 3) == []  # a hub id: nothing on disk to look at


def test_a_tp_that_does_not_divide_the_attention_heads_is_refused(tmp_path: Path):
    (tmp_path / "config.json").write_text(
        json.dumps({"text_config": {"num_attention_heads": 12}})  # a multimodal model
    )
    (tmp_path / "model.safetensors").write_bytes(b"x")
    assert hostcheck.model(str(tmp_path), 8) == [
        "serve.tp: tp 8 does not divide the model's 12 attention heads (config.json); fix:"
        " set params.tp to a divisor of 12"
    ]


def test_no_c_compiler_is_refused_for_gpu_engines_only(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    (line,) = hostcheck.compiler("vllm", "cuda")
    assert line.startswith("serve.jit: no C compiler (cc, gcc or clang) on PATH")
    assert hostcheck.compiler("transformers", "cpu") == []


def test_free_space_is_measured_on_the_nearest_existing_folder(tmp_path: Path):
    where, free = hostcheck._free(str(tmp_path / "not" / "yet"))
    assert where == str(tmp_path) and free is not None and free > 0
