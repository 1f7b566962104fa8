"""A model from a peer and a copy's JIT caches, direct host to host between namespaced hosts
(tests/support/netrig.py), through `gpudash run` (what a user runs): the same verified copy
as tests/rig/test_copy_direct.py, the folder chosen on the peer (issue 21, item 6).

Run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.rig.test_copy_direct import no_key_left
from tests.ssh.test_copy_peer import COMMIT, cache_model, plain_model
from tests.support.cli import tree_of
from tests.support.netrig import NetRig, RigHost


@pytest.fixture
def rig(netrig: NetRig) -> NetRig:
    if netrig.mode != "netns":
        pytest.fail(f"a direct copy needs hosts that reach each other: {netrig.fallback}")
    return netrig


def run(rig: NetRig, tasks: str, tmp: Path, task: str, timeout: float = 120):
    path = tmp / f"c-{time.monotonic_ns()}.toml"
    path.write_text(rig.config_toml() + "\n" + tasks)
    argv = [sys.executable, "-m", "gpudash", "run", task, "h1", "--yes", "--config", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=tmp)


MODEL = '[tasks.model]\nparams = { repo = "org/tiny", from = "h0", streams = 2, chunk_mb = 1 }\n'


def test_a_plain_model_folder_comes_direct_and_a_rerun_only_verifies(rig: NetRig, tmp_path: Path):
    h0, h1 = rig.hosts[0], rig.hosts[1]
    plain_model(h0.home / "models" / "org" / "tiny")
    done = run(rig, MODEL, tmp_path, "model")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "h1 | h0 has org/tiny as a plain folder: ~/models/org/tiny" in out
    assert "direct copy from this host to h1:~/models/org/tiny (2 streams)" in out
    assert "every sha256, mode and link target matches" in out
    src, dst = h0.home / "models" / "org" / "tiny", h1.home / "models" / "org" / "tiny"
    assert tree_of(dst) == tree_of(src)
    no_key_left(rig)

    again = run(rig, MODEL, tmp_path, "model")
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "already complete" in out and "nothing copied" in out
    no_key_left(rig)


def test_the_hf_cache_layout_comes_direct_with_blobs_and_snapshot_links(
    rig: NetRig, tmp_path: Path
):
    h0, h1 = rig.hosts[0], rig.hosts[1]
    src = cache_model(h0.home / ".cache" / "huggingface" / "hub")
    done = run(rig, MODEL, tmp_path, "model")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert (
        f"in its Hugging Face cache: ~/.cache/huggingface/hub/models--org--tiny (snapshot {COMMIT}"
        in out
    )
    dst = h1.home / ".cache" / "huggingface" / "hub" / "models--org--tiny"
    assert tree_of(dst) == tree_of(src)
    link = dst / "snapshots" / COMMIT / "config.json"
    assert link.is_symlink() and os.readlink(link).startswith("../../blobs/")
    assert link.read_text() == '{"model_type": "tiny"}\n'
    no_key_left(rig)


def with_tmpdir(rig: NetRig, host: RigHost) -> Path:
    """The host's sessions get their own TMPDIR (sshd's SetEnv, the rig's line plus TMPDIR):
    torch inductor's default cache is under it, and the rig's hosts share one /tmp."""
    tmp = host.root / "tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    path = f"{host.bin_dir}:/usr/local/bin:/usr/bin:/bin"
    rig.sshd_options(
        host,
        f'SetEnv "PATH={path}" "HOME={host.home}" GPUDASH_TEST_HOST={host.name} "TMPDIR={tmp}"',
    )
    return tmp


def kernels(root: Path, n: int = 3) -> None:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"k{i}.so").write_bytes(os.urandom(4096 + i))


def test_a_copy_with_caches_brings_each_cache_the_source_has_and_says_what_it_skipped(
    rig: NetRig, tmp_path: Path
):
    h0, h1 = rig.hosts[0], rig.hosts[1]
    tmp0, tmp1 = with_tmpdir(rig, h0), with_tmpdir(rig, h1)
    (h0.home / "venv" / "bin").mkdir(parents=True)
    (h0.home / "venv" / "bin" / "python").write_text("#!/bin/sh\n")
    kernels(h0.home / ".cache" / "flashinfer" / "90" / "cached_ops")
    inductor = f"torchinductor_{rig.user}"
    kernels(tmp0 / inductor / "fxgraph")
    tasks = '[tasks.copy]\nparams = { from = "h0", path = "~/venv", caches = true }\n'
    done = run(rig, tasks, tmp_path, "copy")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "h1 | cache triton: not on h0 (~/.triton/cache): skipped" in out
    assert "h1 | cache vllm: not on h0 (~/.cache/vllm): skipped" in out
    assert "h1 | cache flashinfer: h0:~/.cache/flashinfer -> ~/.cache/flashinfer" in out
    # inductor's default is per host (TMPDIR, user): it lands where h1's torch looks
    assert f"h1 | cache torch inductor: h0:{tmp0 / inductor} -> {tmp1 / inductor}" in out
    assert "h1 | caches verified: flashinfer, torch inductor" in out
    assert tree_of(h1.home / "venv") == tree_of(h0.home / "venv")
    assert tree_of(h1.home / ".cache" / "flashinfer") == tree_of(h0.home / ".cache" / "flashinfer")
    assert tree_of(tmp1 / inductor) == tree_of(tmp0 / inductor)
    assert not (h1.home / ".triton").exists()
    started = next(line for line in done.stdout.splitlines() if "== copy: started" in line)
    log = Path(started.rsplit("local log ", 1)[1].rstrip(")")).read_text()
    assert "cache vllm: not on h0 (~/.cache/vllm): skipped\n" in log  # the local log too
    assert "caches verified: flashinfer, torch inductor\n" in log
    no_key_left(rig)


def test_a_peer_without_the_model_fails_in_one_line(rig: NetRig, tmp_path: Path):
    done = run(rig, MODEL, tmp_path, "model")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "h1 | == model: not run: h0 has no copy of org/tiny: looked at ~/models/org/tiny and"
        " ~/.cache/huggingface/hub/models--org--tiny"
    ]
    no_key_left(rig)
