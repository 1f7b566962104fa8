"""Hostile files handed to gpudash (issue 20, items 5 and 6): every one is one line naming the
file, exit 2, quickly, and nothing outside its place is read or written.

A `--save` capture may come from someone else: its parts may be symlinks out of the folder,
FIFOs, devices or huge; its meta.json may be nested beyond the recursion limit; its host
label may carry terminal escapes. A save root may hold planted symlinks. A config, an
identity_file or a known_hosts may be a FIFO (a plain read blocks forever), /dev/zero (a
plain read fills memory) or nested TOML. Each case runs the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from gpudash.model import HostResult, HostState
from gpudash.saved import load_host, save_host
from tests.support import FIXTURES
from tests.support.cli import gpudash
from tests.support.configs import host_table, write_config
from tests.support.sshd import FakeHost, Sshd

CAPTURE = FIXTURES / "saved" / "dgx-h200"


def refused(run: subprocess.CompletedProcess[str], path: Path, why: str) -> None:
    """Exit 2 and exactly one line, naming `path` and saying `why`; no traceback."""
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    assert run.returncode == 2, (run.returncode, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and why in lines[0], lines[0]


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    """A copy of a real capture (tests/fixtures/saved/dgx-h200), to be tampered with."""
    root = tmp_path / "capture"
    shutil.copytree(CAPTURE, root / "dgx-h200")
    return root


# --- item 5: replay reads only regular files inside the folder ---------------------------------


def test_replay_refuses_a_part_that_is_a_symlink_out_of_the_capture(
    capture: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "id_ed25519"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- TOPSECRET\n")
    part = capture / "dgx-h200" / "gpus.smi.txt"
    part.unlink()
    part.symlink_to(secret)
    run = gpudash("probe", "--replay", str(capture), "--json")
    refused(run, part, "symbolic link")
    assert "TOPSECRET" not in run.stdout


def test_replay_refuses_a_fifo_part_at_once(capture: Path) -> None:
    part = capture / "dgx-h200" / "gpus.smi.txt"
    part.unlink()
    os.mkfifo(part)
    started = time.monotonic()
    refused(gpudash("probe", "--replay", str(capture), timeout=20), part, "a FIFO")
    assert time.monotonic() - started < 10


def test_replay_refuses_a_device_part(capture: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test makes a device node: run the suite as root (CI does)")
    part = capture / "dgx-h200" / "gpus.smi.txt"
    part.unlink()
    os.mknod(part, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # the same device as /dev/zero
    refused(gpudash("probe", "--replay", str(capture), timeout=20), part, "character device")


def test_replay_refuses_a_huge_part_without_reading_it(capture: Path) -> None:
    part = capture / "dgx-h200" / "gpus.smi.txt"
    with open(part, "r+b") as f:
        f.truncate(256 * 1024 * 1024)  # sparse: costs no disk, but a whole read is 256 MB
    started = time.monotonic()
    refused(gpudash("probe", "--replay", str(capture)), part, "too large")
    assert time.monotonic() - started < 10


def test_a_host_folder_that_is_a_symlink_to_elsewhere_is_not_a_saved_host(
    capture: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "elsewhere").symlink_to(capture / "dgx-h200", target_is_directory=True)
    run = gpudash("probe", "--replay", str(other))
    assert run.returncode == 2 and "no saved hosts" in run.stderr, run.stderr


def test_a_meta_json_nested_past_the_recursion_limit_is_one_line(capture: Path) -> None:
    meta = capture / "dgx-h200" / "meta.json"
    meta.write_text('{"host": "x", "sections": ' + "[" * 100_000 + "]" * 100_000 + "}")
    refused(gpudash("probe", "--replay", str(capture)), meta, "meta.json")


def test_a_replayed_host_label_with_escapes_and_bidi_reaches_no_terminal_raw(
    capture: Path,
) -> None:
    meta_path = capture / "dgx-h200" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["host"] = "\x1b]52;c;cm0gLXJmIH4K\x07gpu\u202e1\u200b\x1b[2J"
    meta_path.write_text(json.dumps(meta))
    for args in (["probe"], ["check", "--all"], ["report", "gpu<U+202E>1<U+200B>"]):
        run = gpudash(*args, "--replay", str(capture))
        assert "Traceback" not in run.stderr, run.stderr
        text = run.stdout + run.stderr
        assert "gpu<U+202E>1<U+200B>" in text.replace("\\", ""), (args, text)  # md escapes <>
        for raw in ("\x1b", "\x07", "\u202e", "\u200b"):
            assert raw not in text, (args, repr(raw))


def test_bidi_and_zero_width_text_from_a_host_is_shown_not_obeyed_in_probe_and_report(
    capture: Path,
) -> None:
    for name in ("gpus.query.txt", "gpus.smi.txt"):
        part = capture / "dgx-h200" / name
        part.write_text(part.read_text().replace("NVIDIA H200", "NVIDIA H\u202e200\u2066"))
    runs = [gpudash("probe", "--replay", str(capture))]
    runs.append(gpudash("report", "dgx-h200", "--replay", str(capture)))
    for run in runs:
        assert "Traceback" not in run.stderr, run.stderr
        assert "\u202e" not in run.stdout and "\u2066" not in run.stdout
    assert "H<U+202E>200<U+2066>" in runs[1].stdout.replace("\\", "")  # md escapes <>


def test_save_never_writes_through_a_planted_symlink(capture: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    (out / "dgx-h200").mkdir(parents=True)
    for name in ("meta.json", "gpus.smi.txt"):
        (out / "dgx-h200" / name).symlink_to(victim)
    run = gpudash("probe", "--replay", str(capture), "--save", str(out))
    assert run.returncode == 0, run.stderr
    assert victim.read_text() == "keep me\n"
    saved = out / "dgx-h200"
    assert stat.S_IMODE(saved.lstat().st_mode) == 0o700
    for path in saved.iterdir():
        assert path.is_file() and not path.is_symlink(), path
        assert stat.S_IMODE(path.lstat().st_mode) == 0o600, path
    assert load_host(saved).host == "dgx-h200"


def test_save_refuses_a_host_folder_that_is_a_symlink(capture: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "dgx-h200").symlink_to(elsewhere, target_is_directory=True)
    run = gpudash("probe", "--replay", str(capture), "--save", str(out))
    assert "Traceback" not in run.stderr
    assert run.returncode == 1
    assert f"{out / 'dgx-h200'}: a symbolic link" in run.stderr
    assert list(elsewhere.iterdir()) == []


def test_host_names_that_escape_alike_get_distinct_folders(tmp_path: Path) -> None:
    names = ["a/b", "a_b", "a b", "a:b", "a%2Fb", ".", "..", "", "\u202eb", "x" * 300, "x" * 301]
    folders = {save_host(tmp_path, HostResult(n, HostState.READY)) for n in names}
    assert len(folders) == len(names)
    for folder in folders:
        assert folder.parent == tmp_path and not folder.name.startswith(".")
        assert len(folder.name) <= 200
    assert sorted(load_host(f).host for f in folders) == sorted(names)


# --- item 6: bad files named as the config, identity_file, known_hosts ---------------------------


def deep_toml(path: Path) -> Path:
    path.write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    return path


def huge_toml(path: Path) -> Path:
    path.write_text("# " + "x" * (5 * 1024 * 1024) + "\n")
    return path


def binary(path: Path) -> Path:
    path.write_bytes(bytes(range(256)) * 64)
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (fifo, "a FIFO"),
        (lambda _: Path("/dev/zero"), "character device"),
        (deep_toml, "nested too deeply"),
        (huge_toml, "too large"),
        (binary, "not UTF-8"),
    ],
    ids=["fifo", "dev-zero", "deep", "huge", "binary"],
)
def test_a_bad_config_file_is_one_line_naming_it(make, why: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path / "config.toml")
    started = time.monotonic()
    refused(gpudash("probe", "--config", str(path), timeout=20), path, why)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("key", ["identity_file", "known_hosts"])
@pytest.mark.parametrize("make", [fifo, lambda _: Path("/dev/zero")], ids=["fifo", "dev-zero"])
def test_a_bad_key_file_in_the_config_is_one_line_naming_it(  # type: ignore[no-untyped-def]
    make, key: str, tmp_path: Path
) -> None:
    bad = make(tmp_path / "bad")
    config = tmp_path / "c.toml"
    config.write_text(
        f'[hosts.box]\naddress = "127.0.0.1"\nport = 9\nconnect_timeout = 3\n{key} = "{bad}"\n'
    )
    started = time.monotonic()
    run = gpudash("probe", "--config", str(config), timeout=20)
    refused(run, bad, "not a regular file")
    assert f"{config}:5: hosts.box.{key}" in run.stderr
    assert time.monotonic() - started < 10


def test_a_known_hosts_fifo_named_by_ssh_config_fails_the_host_within_its_timeout(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path, tmp_path: Path
) -> None:
    """ssh_config's UserKnownHostsFile is read by gpudash itself (hostkeys.py): a FIFO there
    must fail the host with its name, not hang the probe past connect_timeout."""
    bad = fifo(tmp_path / "known_hosts")
    ssh = isolated_home / ".ssh"
    ssh.mkdir(mode=0o700, exist_ok=True)
    (ssh / "config").write_text(f"Host *\n    UserKnownHostsFile {bad}\n")
    config = tmp_path / "c.toml"
    # no known_hosts key: the one ~/.ssh/config names is the one read
    box = host_table(
        "box",
        address="127.0.0.1",
        port=fake_host.port,
        user=sshd.user,
        identity_file=str(sshd.client_key),
        connect_timeout=5,
    )
    write_config(config, box)
    started = time.monotonic()
    run = gpudash("probe", "--config", str(config), timeout=30)
    assert time.monotonic() - started < 15
    assert "Traceback" not in run.stderr
    assert run.returncode == 1
    assert f"{bad}: not a regular file (a FIFO)" in run.stdout, run.stdout
