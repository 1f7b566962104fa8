"""Which identity files a connection offers: the ones that exist, as OpenSSH does.

OpenSSH skips an `IdentityFile` that is not there (`ssh -v` says "no such identity" and goes
on with the others and the agent): a shared ~/.ssh/config naming `~/.ssh/id_work` on a machine
that lacks it still connects. asyncssh raises FileNotFoundError for it instead, failing the
host. So gpudash resolves the list itself (the host's `identity_file`, else ~/.ssh/config's
IdentityFile lines with their tokens expanded by asyncssh) and passes only the files present.

What is present is checked with gpudash.files.check_regular: a FIFO or a device named as a key
is still refused as one line (asyncssh would block on it), never skipped silently.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass

from gpudash.files import MiB, check_regular

log = logging.getLogger("gpudash.transport.ssh")

KEY_FILE_LIMIT = 4 * MiB  # as gpudash.config.values.KEY_FILE_LIMIT: a key is ~3 KB


@dataclass(frozen=True)
class Identities:
    """The files to offer and the ones skipped (named in a log line, as `ssh -v` does)."""

    present: tuple[str, ...]
    missing: tuple[str, ...]


def existing_identities(paths: Iterable[object]) -> Identities:
    """`paths` split into present files (checked regular and small) and missing ones.

    Raises gpudash.files.RefusedFile for a path that is there but not a key file."""
    present: list[str] = []
    missing: list[str] = []
    for raw in paths:
        path = os.path.expanduser(os.fspath(raw))  # type: ignore[call-overload]
        if not os.path.exists(path):  # missing, or a link to nothing
            missing.append(path)
            continue
        check_regular(path, limit=KEY_FILE_LIMIT)
        present.append(path)
    for path in missing:
        log.info("identity file %s not found: skipped, as OpenSSH does", path)
    return Identities(tuple(present), tuple(missing))
