"""A model from a peer (`model` with `params.from`) over the real test sshd, through
`gpudash run model` (what a user runs), with `via = "gpudash"`: the fake hosts share one
loopback, each with its own HOME, so a model under h0's home is not under h1's. The direct
host-to-host copy of the same is in tests/rig/test_copy_peer.py (it needs the namespaced rig).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.ssh.test_tasks_cli import write_config
from tests.support.cli import tree_of
from tests.support.sshd import FakeHost, Sshd

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def plain_model(root: Path) -> None:
    """What `hf download REPO --local-dir DIR/REPO` leaves: the files, and hf's .cache/."""
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "tiny"}\n')
    (root / "model.safetensors").write_bytes(os.urandom(3 * 1024 * 1024 + 5))
    meta = root / ".cache" / "huggingface" / "download"
    meta.mkdir(parents=True)
    (meta / "config.json.metadata").write_text(f"{COMMIT}\netag\n1700000000.0\n")


def cache_model(hub: Path, repo: str = "org/tiny") -> Path:
    """The Hugging Face cache layout (https://huggingface.co/docs/hub/local-cache): blobs by
    hash, refs/main naming the commit, the snapshot's files as relative links into blobs."""
    root = hub / ("models--" + repo.replace("/", "--"))
    blobs = root / "blobs"
    blobs.mkdir(parents=True)
    snap = root / "snapshots" / COMMIT
    (snap / "sub").mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(COMMIT)
    files = {
        "config.json": b'{"model_type": "tiny"}\n',
        "model.safetensors": os.urandom(2 * 1024 * 1024),
        "sub/tokenizer.json": b'{"v": 1}\n',
    }
    for name, data in files.items():
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        up = "../" * (name.count("/") + 2)
        (snap / name).symlink_to(f"{up}blobs/{digest}")
    return root


def model_tasks(**params: str) -> str:
    extra = "".join(f', {k} = "{v}"' for k, v in params.items())
    return f'[tasks.model]\nparams = {{ repo = "org/tiny", from = "h0", via = "gpudash"{extra} }}\n'


def run(sshd: Sshd, hosts: list[FakeHost], tmp: Path, tasks: str) -> int:
    from gpudash.cli.main import main

    config = write_config(sshd, hosts, tmp / "c.toml", tasks)
    return main(["run", "model", "h1", "--yes", "--config", config])


def test_a_plain_model_folder_comes_from_the_peer_verified(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    h0, h1 = fake_hosts[:2]
    plain_model(h0.home / "models" / "org" / "tiny")
    assert run(sshd, [h0, h1], tmp_path, model_tasks()) == 0
    out = capsys.readouterr().out.splitlines()
    assert "h1 | h0 has org/tiny as a plain folder: ~/models/org/tiny" in out
    assert any(
        line.startswith("h1 | it lands at ~/models/org/tiny on h1, verified") for line in out
    )
    assert any("every sha256 matches" in line for line in out), out
    assert any(line.startswith("h1 | == model: ok (") for line in out)
    dst = h1.home / "models" / "org" / "tiny"
    assert tree_of(dst) == tree_of(h0.home / "models" / "org" / "tiny")
    started = next(line for line in out if "== model: started" in line)
    log = Path(started.rsplit("local log ", 1)[1].rstrip(")")).read_text()
    assert "h0 has org/tiny as a plain folder: ~/models/org/tiny\n" in log  # the local log too


def test_the_hf_cache_layout_comes_with_its_blobs_and_snapshot_links(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    h0, h1 = fake_hosts[:2]
    src = cache_model(h0.home / ".cache" / "huggingface" / "hub")
    assert run(sshd, [h0, h1], tmp_path, model_tasks()) == 0
    out = capsys.readouterr().out.splitlines()
    where = "~/.cache/huggingface/hub/models--org--tiny"
    said = f"h1 | h0 has org/tiny in its Hugging Face cache: {where} (snapshot {COMMIT};"
    assert any(line.startswith(said) for line in out), out
    assert f"h1 | it lands at {where} on h1, verified (sha256, mode, link target)" in out
    dst = h1.home / ".cache" / "huggingface" / "hub" / "models--org--tiny"
    assert tree_of(dst) == tree_of(src)
    link = dst / "snapshots" / COMMIT / "sub" / "tokenizer.json"
    assert link.is_symlink() and os.readlink(link).startswith("../../../blobs/")
    assert link.read_text() == '{"v": 1}\n'  # the link resolves inside the copy


def test_a_revision_the_peer_lacks_and_a_peer_without_the_model_fail_in_one_line(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    h0, h1 = fake_hosts[:2]
    assert run(sshd, [h0, h1], tmp_path, model_tasks()) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "h1 | == model: not run: h0 has no copy of org/tiny: looked at ~/models/org/tiny and"
        " ~/.cache/huggingface/hub/models--org--tiny"
    ], out
    cache_model(h0.home / ".cache" / "huggingface" / "hub")
    assert run(sshd, [h0, h1], tmp_path, model_tasks(revision="v2")) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "h1 | == model: not run: h0 has org/tiny in its Hugging Face cache"
        " (~/.cache/huggingface/hub/models--org--tiny) but not revision v2 (its refs: main)"
    ], out
    assert not (h1.home / ".cache" / "huggingface").exists()
