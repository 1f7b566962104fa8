"""The CLI's text as a user reads it, through the real `gpudash` command against the test
sshd (issue 33, items 4, 6 and 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.sshd import FakeHost, Sshd


def gpudash(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudash", *argv],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_probe_says_how_to_run_verify_from_the_cli(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    config = tmp_path / "gpudash.toml"
    config.write_text(sshd.host_toml(fake_host))
    done = gpudash("probe", "h0", "--config", str(config))
    [line] = [x for x in done.stdout.splitlines() if x.startswith("h0 │ verify ")]
    assert line.endswith("not run (`gpudash run verify HOST` runs it; V in the dashboard)"), line
    assert "(V runs it)" not in done.stdout
