"""The one sh library of gpudash's remote scripts (shlib.sh beside this module), and the
graces it is called with.

Stopping what a remote script started used to be written five times with three graces, and
a fix to one timer did not reach the others. Now there is one `kill_wait` (TERM, wait, KILL,
with the sudo fallback), one `kill_group` and one `kill_timer`, included by the probe, the
job wrapper and its cancel, and the copy's stop; the exec string, which must stay one line of
single-quoted words (`gpudash.transport.base.script_command`), gets the same text joined into
one line (`one_line`). tests/ssh/test_shlib.py runs it under dash, busybox sh and bash.

The copy's part (shlib_copy.sh: `remote`, `dial`, `hold`, `mux_dir`, the one ssh to a
destination under a direct copy's one-use key) is a file of its own, `COPY_LIB`, included
only by the copy's scripts, so the probe's script does not grow; the same tests run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LIB = (Path(__file__).parent / "shlib.sh").read_text(encoding="utf-8")
"""The library's text, read beside this module (as probe/prelude.sh is: no importlib.resources
at start-up)."""


@dataclass(frozen=True)
class Grace:
    """Seconds between TERM and KILL for one kind of stop, and why that many."""

    seconds: int
    why: str


# Every grace a remote stop uses: TERM, then KILL this many seconds later (or at once when
# the target is gone sooner). One table, so a change is made once and its reason read beside it.
GRACES: dict[str, Grace] = {
    "exec": Grace(
        5,
        "a whole remote command past its limit (`timeout -k` in the exec string, or the sh"
        " timer): its own traps stop what it started, which takes a moment; only a shell that"
        " ignores TERM needs the KILL",
    ),
    "section": Grace(
        2,
        "one probe section past its limit: the probe waits for it before it can end, and a"
        " GPU tool that ignores TERM (a hung nvidia-smi) will not answer it anyway",
    ),
    "job": Grace(
        10,
        "a task past its limit or cancelled: an installer, a download or a server gets the"
        " time to write its state and remove its temp files before the KILL",
    ),
    "copy": Grace(
        2,
        "one end of a relayed copy stopped (tar): nothing to save, the partial copy is removed"
        " right after, and the user waits on it",
    ),
    "ssh": Grace(
        5,
        "one ssh of a direct copy past its limit (`timeout -k` in shlib_copy.sh's `_ssh`): at"
        " TERM ssh closes its channel, and the receiving end sees the end of its stream; only"
        " an ssh stuck writing to a dead link needs the KILL",
    ),
}


def grace(name: str) -> int:
    """The seconds of `GRACES[name]`."""
    return GRACES[name].seconds


COPY_LIB = f"GD_SSH_GRACE={GRACES['ssh'].seconds}\n" + (
    Path(__file__).parent / "shlib_copy.sh"
).read_text(encoding="utf-8")
"""The copy's part of the library (shlib_copy.sh), its grace set above it: for the copy's
scripts only (`gpudash.tasks.copy.direct_scripts`, `fanout_scripts`)."""


def one_line(text: str = LIB) -> str:
    """The library as one line, for an exec string: comments dropped, lines joined by a space
    (each line ends its command itself: see shlib.sh's head)."""
    lines = (line.strip() for line in text.splitlines())
    return " ".join(line for line in lines if line and not line.startswith("#"))
