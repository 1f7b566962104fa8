"""What a command ends with: its exit code, or a usage error that becomes one line and code 2.

The bottom of `gpudash/cli/`: it imports nothing of gpudash, so every command module (and
main's dispatch) can import it without an import loop.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Every exit code the `gpudash` command ends with; the README lists the same ones."""

    OK = 0
    FAILED = 1
    """A host did not answer, a check found a fail, a task failed."""
    USAGE = 2
    """Bad arguments or a bad config: one line on stderr naming the thing at fault."""
    CANCELLED = 128 + 2
    """ctrl+c (SIGINT), as a shell reports a command it killed."""
    BROKEN_PIPE = 128 + 13
    """The reader of the output left (`gpudash probe | head`), as a shell reports SIGPIPE."""


class UsageError(Exception):
    """A one-line problem with what the user asked for (exit code 2)."""
