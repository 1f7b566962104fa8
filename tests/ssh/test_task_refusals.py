"""Tasks that cannot work are refused before anything runs, and a host that cannot be reached
is said to be one (issue 33, item 3), through the real `gpudash` command against the test sshd:
its hosts have no nvidia-smi, as a GPU-less machine has none."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.support.sshd import FakeHost, Sshd


def gpudash(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudash", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_verify_on_a_host_without_a_gpu_is_refused_before_its_needs_install_anything(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    config = tmp_path / "gpudash.toml"
    config.write_text(sshd.host_toml(fake_host))
    done = gpudash("run", "verify", "h0", "--yes", "--config", str(config))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "h0 | == verify: not run: no NVIDIA GPU or driver on this host: its probe found no"
        " nvidia-smi or NVML (verify needs a GPU)"
    ], lines
    assert not (fake_host.home / "venvs").exists()  # no venv, no torch: nothing ran
    assert "Traceback" not in done.stderr


def test_a_task_on_a_host_that_does_not_answer_fails_cannot_connect_not_lost(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    config = tmp_path / "gpudash.toml"
    table = sshd.host_toml(fake_host, "down").replace(
        f"port = {fake_host.port}", f"port = {closed_port()}"
    )
    config.write_text(table + '\n[tasks.hello]\ntitle = "hi"\nkind = "script"\nrun = "echo hi"\n')
    done = gpudash("run", "hello", "down", "--yes", "--config", str(config))
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith("down | == hello: failed: cannot connect: "), line
    assert "refused" in line and "lost" not in line and "down: " not in line, line
