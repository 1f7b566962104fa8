"""`gpudash` (the dashboard) without a terminal says so in one line and exits 2 (issue 33,
item 5: `gpudash < /dev/null > out` wrote 80 KB of escape codes into `out` until killed).
The real command in a subprocess; the old one never returned (the timeout fails it)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

LINE = "gpudash: not a terminal: use `gpudash probe` or `gpudash check` (the dashboard needs one)\n"


def run(stdin: int, stdout: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gpudash"], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
        timeout=20,
    )  # fmt: skip


def test_stdin_and_stdout_not_terminals_one_line_and_exit_2(tmp_path) -> None:
    out = tmp_path / "out"
    with open(os.devnull, "rb") as null, open(out, "wb") as sink:
        done = run(null.fileno(), sink.fileno())
    assert done.returncode == 2
    assert done.stderr.decode() == LINE
    assert out.read_bytes() == b""


def test_a_terminal_on_stdin_but_stdout_a_file_is_refused_too(tmp_path) -> None:
    controller, terminal = pty.openpty()
    try:
        with open(tmp_path / "out", "wb") as sink:
            done = run(terminal, sink.fileno())
    finally:
        os.close(controller)
        os.close(terminal)
    assert done.returncode == 2 and done.stderr.decode() == LINE
    assert (tmp_path / "out").read_bytes() == b""
