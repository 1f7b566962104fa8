"""`gpudash parse` on input no tool printed: a device, an endless stream, and text that would
drive the terminal. Each ends in one clear line and an exit code (never a traceback), and
`--text` shows remote text cleaned, like every other path to a terminal.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import gpudash

ROOT = str(Path(gpudash.__file__).resolve().parent.parent)


def gpudash_parse(*args: str, stdin: int | bytes | None = None) -> subprocess.CompletedProcess:
    """`python -m gpudash parse ARGS` with 1 GiB of address space: reading a device whole
    fails fast with a MemoryError instead of taking the machine's memory."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {**os.environ, "PYTHONPATH": ROOT}
    feed = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin}
    return subprocess.run(
        [sys.executable, "-m", "gpudash", "parse", *args],
        capture_output=True,
        timeout=60,
        env=env,
        preexec_fn=limit,
        **feed,  # type: ignore[arg-type]  # input= or stdin=, never both
    )


def test_a_device_file_is_one_line_and_exit_2_not_a_memory_error():
    done = gpudash_parse("topo", "/dev/zero")
    assert done.returncode == 2, done.stderr.decode()[-500:]
    assert done.stderr.decode().splitlines() == [
        "gpudash: /dev/zero: more than 16 MiB: not one tool's output"
        " (a device or an endless stream?)"
    ]


def test_an_endless_stdin_is_one_line_and_exit_2():
    with open("/dev/zero", "rb") as zero:
        done = gpudash_parse("smi", "-", stdin=zero.fileno())
    assert done.returncode == 2, done.stderr.decode()[-500:]
    assert done.stderr.decode().startswith("gpudash: stdin: more than 16 MiB")
    assert b"Traceback" not in done.stderr


def test_query_text_shows_control_and_invisible_characters_cleaned():
    csv = "index, name, serial\n0, A\x08\x07B\u200bC\u202eD, 42\n".encode()
    done = gpudash_parse("query", "--text", "-", stdin=csv)
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    for raw in ("\x08", "\x07", "\u200b", "\u202e"):
        assert raw not in out
    assert "name=A^H^GB<U+200B>C<U+202E>D" in out
