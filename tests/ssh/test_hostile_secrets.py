"""Planted tokens never leave the host through gpudash, and what gpudash writes is private.

A second real sshd (the suite's `Sshd`, with HF_TOKEN added to every session's environment)
serves a host that also keeps a token in ~/.cache/huggingface/token; the user's own shell
holds an HF_TOKEN and a non-HF-shaped secret that a task sends. Every command that shows or
writes something runs against it: `probe` (text, JSON, --save), `check`, `report` (stdout
and -o), `run` (stdout and the task log). Then every byte gpudash printed or wrote is
searched for the tokens, and every file and directory it created is checked for its mode,
with the process umask at 000 so the modes come from gpudash and not from the umask.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import configs
from tests.support.cli import gpudash as run_gpudash
from tests.support.sshd import FakeHost, Sshd

HOST_ENV_TOKEN = "hf_HOSTenvPLANTEDtokenValue0123456789ab"
HOST_FILE_TOKEN = "hf_HOSTfilePLANTEDtokenValue0123456789a"
LOCAL_TOKEN = "hf_LOCALplantedTOKENvalue0123456789abcd"
LOCAL_KEY = "wandbPLANTEDapiKEY0123456789xyz"
TOKENS = (HOST_ENV_TOKEN, HOST_FILE_TOKEN, LOCAL_TOKEN, LOCAL_KEY)


class TokenSshd(Sshd):
    """The suite's sshd, with a token in every session's environment."""

    def _configure(self, ports: list[int]) -> None:
        super()._configure(ports)
        text = self.config.read_text()
        self.config.write_text(
            text.replace("GPUDASH_TEST_HOST=", f"HF_TOKEN={HOST_ENV_TOKEN} GPUDASH_TEST_HOST=")
        )


@pytest.fixture(scope="module")
def token_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenSshd]:
    server = TokenSshd(tmp_path_factory.mktemp("token-sshd"))
    server.start()
    try:
        yield server
    finally:
        server.close()


TASK = """
[tasks.leak]
title = "print every token it can find"
kind = "script"
secrets = ["HF_TOKEN", "WANDB_API_KEY"]
run = '''
echo "env token: $HF_TOKEN"
echo "key: $WANDB_API_KEY"
echo "file token: $(cat "$HOME/.cache/huggingface/token")"
printf 'progress\\r%s\\n' "$WANDB_API_KEY"
'''
"""


def write_config(sshd: Sshd, host: FakeHost, path: Path, home: Path) -> Path:
    box = sshd.host_toml(
        host,
        "box",
        # accept-new into a known_hosts file gpudash creates itself
        known_hosts=f"{home}/.ssh/known_hosts",
        host_key_policy="accept-new",
        network_targets=["http://127.0.0.1:9/"],
    )
    return configs.write_config(path, box + TASK)


def gpudash(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "HF_TOKEN": LOCAL_TOKEN, "WANDB_API_KEY": LOCAL_KEY}
    return run_gpudash(*args, text=False, timeout=90, env=env, preexec_fn=lambda: os.umask(0))


def test_no_planted_token_appears_in_anything_gpudash_printed_or_wrote(
    token_sshd: TokenSshd, isolated_home: Path, tmp_path: Path
) -> None:
    host = token_sshd.hosts[0]
    host.reset()
    hf = host.home / ".cache" / "huggingface"
    hf.mkdir(parents=True)
    (hf / "token").write_text(HOST_FILE_TOKEN + "\n")
    config = str(write_config(token_sshd, host, tmp_path / "c.toml", isolated_home))
    out = tmp_path / "out"
    out.mkdir()
    runs = {
        "probe": gpudash("probe", "--config", config),
        "probe-json": gpudash("probe", "--json", "--save", str(out / "saved"), "--config", config),
        "check": gpudash("check", "--json", "--all", "--config", config),
        "report": gpudash("report", "box", "--config", config),
        "report-o": gpudash("report", "box", "-o", str(out / "report.md"), "--config", config),
        "run": gpudash("run", "leak", "box", "-y", "--config", config),
    }
    for name, run in runs.items():
        assert b"Traceback" not in run.stderr, (name, run.stderr)
    assert runs["probe"].returncode == 0, runs["probe"].stderr
    assert runs["run"].returncode == 0, runs["run"].stdout + runs["run"].stderr

    # The probe saw both host tokens exist (so they were there to leak) ...
    network = json.loads(runs["probe-json"].stdout)["hosts"][0]["sections"]["network"]["data"]
    assert network["hf_token_source"] == "env HF_TOKEN"
    # ... and the task really printed them (masked) on the host.
    lines = runs["run"].stdout.decode().splitlines()
    assert "box | env token: ********" in lines
    assert "box | file token: hf_********" in lines
    assert "box | key: ********" in lines

    written = [p for p in isolated_home.rglob("*") if p.is_file()]
    written += [p for p in out.rglob("*") if p.is_file()]
    logs = [p for p in written if p.suffix == ".log"]
    assert logs, "the task run left no local log"
    assert "key: ********" in logs[0].read_text()
    blobs = {f"{n} stdout": r.stdout for n, r in runs.items()}
    blobs |= {f"{n} stderr": r.stderr for n, r in runs.items()}
    blobs |= {str(p): p.read_bytes() for p in written if p != hf / "token"}
    for where, data in blobs.items():
        for token in TOKENS:
            assert token.encode() not in data, f"{token} leaked into {where}"


def test_state_logs_saves_and_known_hosts_are_created_private_whatever_the_umask(
    token_sshd: TokenSshd, isolated_home: Path, tmp_path: Path
) -> None:
    host = token_sshd.hosts[1]
    host.reset()
    config = str(write_config(token_sshd, host, tmp_path / "c.toml", isolated_home))
    saved = tmp_path / "saved"
    assert gpudash("probe", "--save", str(saved), "--config", config).returncode == 0
    assert gpudash("run", "leak", "box", "-y", "--config", config).returncode == 0

    state = isolated_home / ".local" / "state" / "gpudash"
    ssh = isolated_home / ".ssh"
    roots = [state, saved, ssh]
    for root in roots:
        assert root.is_dir(), f"{root} was not created"
    seen = 0
    for root in roots:
        for path in [root, *root.rglob("*")]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            want = 0o700 if path.is_dir() else 0o600
            assert mode == want, f"{path} is {oct(mode)}, want {oct(want)}"
            seen += 1
    assert seen > 20
