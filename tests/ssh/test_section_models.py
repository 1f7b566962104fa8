"""The models section over real folders: plain models, nested org folders, the hub cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpudash.probe.parts import Part
from gpudash.probe.sections import models
from tests.support import FIXTURES
from tests.support.sectionrun import bin_dir, busybox_sh, run_section

FIX = FIXTURES / "sections"
MODEL_DIRS = "/nonexistent/models\n~/models\n~/.cache/huggingface/hub"
KIB = 1024


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "GPUDASH_MODEL_DIRS": MODEL_DIRS, **extra}


def _index(folder: Path, shards: list[str]) -> None:
    weight_map = {f"model.layers.{i}.weight": s for i, s in enumerate(shards)}
    weight_map["lm_head.weight"] = shards[-1]
    text = json.dumps({"metadata": {"total_size": 123}, "weight_map": weight_map}, indent=2)
    (folder / "model.safetensors.index.json").write_text(text)


def _model(folder: Path, shards: list[str], present: list[str] | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    _index(folder, shards)
    for shard in shards if present is None else present:
        (folder / shard).write_bytes(b"w" * 5)
    return folder


def _hub_entry(hub: Path, repo: str, files: dict[str, bytes], revs: list[str]) -> Path:
    """models--ORG--NAME with blobs, and each revision linking every file to its blob."""
    entry = hub / ("models--" + repo.replace("/", "--"))
    (entry / "blobs").mkdir(parents=True)
    for i, data in enumerate(files.values()):
        (entry / "blobs" / f"blob{i}").write_bytes(data)
    for rev in revs:
        snap = entry / "snapshots" / rev
        snap.mkdir(parents=True)
        for i, name in enumerate(files):
            (snap / name).symlink_to(f"../../blobs/blob{i}")
    return entry


SHARDS = ["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
          "model-00003-of-00003.safetensors"]  # fmt: skip


def test_models_reports_complete_incomplete_and_nested_models(tmp_path: Path) -> None:
    root = tmp_path / "models"
    _model(root / "Good", SHARDS)
    _model(root / "Broken", SHARDS, present=SHARDS[:2])
    nested = root / "meta-llama" / "Llama-3.1-8B"
    nested.mkdir(parents=True)
    (nested / "config.json").write_text("{}")
    (nested / "model.safetensors").write_bytes(b"x" * 10)
    (root / "notes").mkdir()  # neither a model nor holding one: shown as incomplete
    _, result = run_section(models, _env(tmp_path))
    assert isinstance(result, models.Models)
    absent, plain, hub = result.dirs
    assert absent == models.ModelDir("/nonexistent/models", False)
    assert (plain.path, plain.exists) == (str(root), True)
    assert hub == models.ModelDir(str(tmp_path / ".cache/huggingface/hub"), False)
    by_name = {m.name: m for m in plain.models}
    assert sorted(by_name) == ["Broken", "Good", "meta-llama/Llama-3.1-8B", "notes"]
    good, broken = by_name["Good"], by_name["Broken"]
    assert good.complete and good.has_config and good.shards == 3 and good.missing == ()
    assert not broken.complete
    assert (broken.missing, broken.missing_count) == ((SHARDS[2],), 1)
    assert by_name["meta-llama/Llama-3.1-8B"].complete
    assert not by_name["notes"].complete and not by_name["notes"].has_weights
    assert all(m.size_bytes is not None and m.size_bytes > 0 for m in plain.models)


def test_models_names_hub_entries_and_sizes_their_blobs_once(tmp_path: Path) -> None:
    hub = tmp_path / ".cache" / "huggingface" / "hub"
    weights = os.urandom(1024 * KIB)
    # The snapshot's links take no room: the size is the blobs', about 1 MiB, counted once.
    _hub_entry(hub, "Qwen/Qwen3-0.6B", {"config.json": b"{}", "model.safetensors": weights},
               ["abc123"])  # fmt: skip
    (hub / ".locks").mkdir()
    (hub / "version.txt").write_text("1")
    _, result = run_section(models, _env(tmp_path))
    assert isinstance(result, models.Models)
    (model,) = result.dirs[2].models
    assert model.name == "Qwen/Qwen3-0.6B"
    assert model.revision == "abc123"
    assert model.path == str(hub / "models--Qwen--Qwen3-0.6B" / "snapshots" / "abc123")
    assert model.complete and model.has_config
    assert model.size_bytes is not None and 1024 * KIB <= model.size_bytes < 1100 * KIB


def test_models_counts_a_blob_once_when_two_revisions_share_it(tmp_path: Path) -> None:
    hub = tmp_path / ".cache" / "huggingface" / "hub"
    weights = os.urandom(512 * KIB)
    files = {"config.json": b"{}", "model.safetensors": weights}
    _hub_entry(hub, "org/model", files, ["rev1", "rev2"])
    _, result = run_section(models, _env(tmp_path))
    assert isinstance(result, models.Models)
    revs = result.dirs[2].models
    assert [m.revision for m in revs] == ["rev1", "rev2"]
    for m in revs:  # each revision's own size: the blob once, not once per link
        assert m.size_bytes is not None and 512 * KIB <= m.size_bytes < 600 * KIB


def test_models_sees_a_hub_shard_whose_blob_is_missing_and_partial_downloads(
    tmp_path: Path,
) -> None:
    hub = tmp_path / ".cache" / "huggingface" / "hub"
    files = {"config.json": b"{}", SHARDS[0]: b"a", SHARDS[1]: b"b", SHARDS[2]: b"c"}
    entry = _hub_entry(hub, "org/sharded", files, ["main1"])
    snap = entry / "snapshots" / "main1"
    _index(snap, SHARDS)
    (entry / "blobs" / "blob3").unlink()  # the link to shard 3 now dangles
    (entry / "blobs" / "deadbeef.incomplete").write_bytes(b"half")
    _, result = run_section(models, _env(tmp_path))
    assert isinstance(result, models.Models)
    (model,) = result.dirs[2].models
    assert (model.complete, model.missing, model.partial_downloads) == (False, (SHARDS[2],), 1)


def test_a_hub_entry_of_refs_alone_is_no_model_but_one_with_blobs_is_a_begun_download(
    tmp_path: Path,
) -> None:
    """`hf download --local-dir` leaves models--ORG--NAME/refs/main in the hub cache: that is
    not an incomplete model (it was reported as one, with a warning, beside the whole model
    in the local dir). An entry whose blobs exist but no snapshot does is a download begun."""
    hub = tmp_path / ".cache" / "huggingface" / "hub"
    refs = hub / "models--org--elsewhere" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("0123456789abcdef0123456789abcdef01234567")
    begun = hub / "models--org--begun" / "blobs"
    begun.mkdir(parents=True)
    (begun / "cafe.incomplete").write_bytes(b"half")
    _, result = run_section(models, _env(tmp_path))
    assert isinstance(result, models.Models)
    (model,) = result.dirs[2].models
    assert (model.name, model.complete) == ("org/begun", False)


def test_models_caps_the_list_of_missing_shards_but_counts_them_all(tmp_path: Path) -> None:
    shards = [f"model-{i:05d}-of-00030.safetensors" for i in range(1, 31)]
    _model(tmp_path / "models" / "Huge", shards, present=[])
    _, result = run_section(models, _env(tmp_path))
    assert isinstance(result, models.Models)
    (huge,) = result.dirs[1].models
    assert huge.missing_count == 30 and huge.shards == 30
    assert huge.missing == tuple(shards[: models.MISSING_CAP])
    assert not huge.complete and not huge.has_weights


def test_models_adds_hf_hub_cache_and_lists_a_dir_once(tmp_path: Path) -> None:
    hub = tmp_path / ".cache" / "huggingface" / "hub"
    hub.mkdir(parents=True)
    other = tmp_path / "elsewhere"
    other.mkdir()
    env = _env(tmp_path, HF_HOME=str(tmp_path / ".cache" / "huggingface"))
    _, result = run_section(models, env)  # HF_HOME/hub is the configured hub: once
    assert isinstance(result, models.Models)
    assert [d.path for d in result.dirs].count(str(hub)) == 1
    _, result = run_section(models, {**env, "HF_HUB_CACHE": str(other)})
    assert isinstance(result, models.Models)
    assert result.dirs[-1] == models.ModelDir(str(other), True)


def test_models_reports_free_space_of_model_dirs_root_and_home(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    _, result = run_section(models, _env(tmp_path))
    assert isinstance(result, models.Models)
    paths = [fs.path for fs in result.filesystems]
    assert paths == [str(tmp_path / "models"), "/", str(tmp_path)]
    stat = os.statvfs("/")
    root = result.filesystems[1]
    assert root.mount == "/"
    assert root.total_bytes == pytest.approx(stat.f_blocks * stat.f_frsize, rel=0.01)
    assert all(fs.free_bytes is not None and fs.total_bytes for fs in result.filesystems)


def test_models_without_du_or_df_still_lists_models(tmp_path: Path) -> None:
    _model(tmp_path / "models" / "Good", SHARDS)
    tools = ("cat", "grep", "sed", "tr", "head", "tail", "cut", "sort", "readlink")
    env = {**_env(tmp_path), "PATH": bin_dir(tmp_path / "bin", tools)}
    _, result = run_section(models, env)
    assert isinstance(result, models.Models)
    (good,) = result.dirs[1].models
    assert good.complete and good.size_bytes is None
    assert all(fs.total_bytes is None for fs in result.filesystems)


def test_models_reads_the_same_under_busybox_sh(tmp_path: Path) -> None:
    _model(tmp_path / "models" / "Good", SHARDS)
    _model(tmp_path / "models" / "Broken", SHARDS, present=SHARDS[:1])
    _hub_entry(tmp_path / ".cache/huggingface/hub", "a/b", {"config.json": b"{}"}, ["r"])
    _, dash = run_section(models, _env(tmp_path))
    _, bb = run_section(models, _env(tmp_path), shell=busybox_sh())
    assert isinstance(bb, models.Models) and isinstance(dash, models.Models)
    assert bb.dirs == dash.dirs


def test_models_parses_the_h200_capture_of_no_models() -> None:
    lines = (FIX / "models.txt").read_text().splitlines()
    absent = [line.split("'")[1] for line in lines if "cannot access" in line]
    assert absent[0] == "/root/models"
    parts = {f"dir.{i}": Part(f"dir.{i}", 0, f"dir\t{p}\t0") for i, p in enumerate(absent, 1)}
    parts["df"] = Part(
        "df", 0, "fs\t/\t/dev/vda  264109824  17825792  67108864  21% /\nfs\t/root\tdf: oops"
    )
    result = models.parse(parts)
    assert [d.path for d in result.dirs] == absent
    assert not any(d.exists or d.models for d in result.dirs)
    root, home = result.filesystems
    assert (root.mount, root.total_bytes, root.free_bytes) == ("/", 264109824 * KIB, 67108864 * KIB)
    assert home == models.Filesystem("/root", None, None, None)


def test_models_treats_a_gguf_folder_without_config_as_complete() -> None:
    text = "dir\t/m\t1\nmodel\tQwen3-8B-GGUF\t/m/Qwen3-8B-GGUF\nweights\t1\nsize\t4\n"
    (model,) = models.parse({"dir.1": Part("dir.1", 0, text)}).dirs[0].models
    assert model.complete and not model.has_config and model.size_bytes == 4 * KIB


def test_models_notes_a_dir_cut_off_by_the_timeout() -> None:
    text = "dir\t/big\t1\nmodel\tA\t/big/A\nconfig\t1"
    result = models.parse({"dir.1": Part("dir.1", None, text)})
    assert result.dirs[0].models[0].name == "A"
    assert result.notes == ("/big: cut off (timeout)",)
