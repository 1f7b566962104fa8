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
    "import atexit, runpy, sys; out = sys.argv.pop(1);"
    "atexit.register(lambda: open(out, 'w').write(next("
    "l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))));"
    "sys.argv[0] = 'gpudash'; runpy.run_module('gpudash', run_name='__main__')"
)


def gpudash_argv(rss_file: Path, *args: str) -> list[str]:
    """`python -m gpudash ARGS` that writes its own peak RSS (KiB) to `rss_file` as it exits."""
    return [sys.executable, "-c", _WRAPPER, str(rss_file), *args]


def peak_kib(rss_file: Path) -> int:
    """What `gpudash_argv`'s process wrote; 0 when it died before writing."""
    return int(rss_file.read_text()) if rss_file.exists() else 0
