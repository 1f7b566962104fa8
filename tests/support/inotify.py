"""Every name created in a directory, as the kernel saw it (Linux inotify, through ctypes).

A test that must prove a file *never* existed, not merely that it is gone by the end (a secret
written and deleted a few milliseconds later), reads the directory's creations from here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path

IN_CREATE = 0x100
IN_MOVED_TO = 0x80
IN_NONBLOCK = 0o4000
_HEAD = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (inotify(7))


class Creations:
    """Names created (or moved) into `directory` from now on; `names()` drains them."""

    def __init__(self, directory: Path) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._fd = libc.inotify_init1(IN_NONBLOCK)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        wd = libc.inotify_add_watch(self._fd, os.fsencode(directory), IN_CREATE | IN_MOVED_TO)
        if wd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {directory}")
        self._seen: list[str] = []

    def names(self) -> list[str]:
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return list(self._seen)
            at = 0
            while at + _HEAD.size <= len(data):
                _wd, _mask, _cookie, size = _HEAD.unpack_from(data, at)
                name = data[at + _HEAD.size : at + _HEAD.size + size].rstrip(b"\0")
                self._seen.append(os.fsdecode(name))
                at += _HEAD.size + size

    def close(self) -> None:
        os.close(self._fd)
