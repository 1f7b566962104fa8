"""A child's own peak memory, measured from inside it.

`ru_maxrss` (getrusage in the child, wait4 in the parent) is not it: Linux carries the
high-water mark of the address space a process had before `exec` (a forked copy of its
parent's) into the new program, so a child of a 400 MB pytest reports 400 MB however little it
used itself. `VmHWM` in /proc/self/status belongs to the current address space alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

_WRAPPER = (
    "import atexit, os, runpy, sys; out = sys.argv.pop(1); done = [];"
    "peak = lambda: done or done.append(open(out, 'w').write(next("
    "l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))));"
    "atexit.register(peak); exit_now = os._exit;"
    "os._exit = lambda code: (peak(), exit_now(code));"
    "sys.argv[0] = 'gpudash'; runpy.run_module('gpudash', run_name='__main__')"
)
"""`gpudash.cli.main.entry` ends with `os._exit` (no interpreter teardown, so no atexit): the
wrapper writes the peak there too; before, every such run wrote nothing and read as 0 KiB."""


def gpudash_argv(rss_file: Path, *args: str) -> list[str]:
    """`python -m gpudash ARGS` that writes its own peak RSS (KiB) to `rss_file` as it exits."""
    return [sys.executable, "-c", _WRAPPER, str(rss_file), *args]


def peak_kib(rss_file: Path) -> int:
    """What `gpudash_argv`'s process wrote; 0 when it died before writing."""
    return int(rss_file.read_text()) if rss_file.exists() else 0
