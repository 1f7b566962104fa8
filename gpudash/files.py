"""Local files gpudash reads and writes, opened so that a hostile one cannot hang or flood it.

Every file a user or a colleague hands gpudash (a config, an identity_file, a known_hosts, a
part of a `--save` capture) may be a FIFO (`read()` blocks forever: no timeout applies to a
local read), a device (`/dev/zero` never ends), a symlink out of the directory it claims to
be in, or simply huge. So a read here opens with O_NONBLOCK (a FIFO opens at once instead of
waiting for a writer), `fstat`s the open descriptor (what was opened is what is checked: no
race with a rename), refuses anything but a regular file, and reads at most `limit` bytes.
A write (`create_private`) never follows a symlink and never reuses a file it did not create.

Each refusal is a `RefusedFile` whose text is one line naming the file and why.
"""

from __future__ import annotations

import errno
import os
import stat

MiB = 1024 * 1024


class RefusedFile(OSError):
    """A file gpudash will not read or write; str() is `PATH: why`, one line. An OSError,
    so every caller that already reports an unreadable file reports this one too."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(f"{os.fspath(path)}: {why}")
        self.path = os.fspath(path)
        self.why = why


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words, for the refusal."""
    for test, words in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n} bytes"


def read_bytes(path: str | os.PathLike[str], *, limit: int, follow: bool = True) -> bytes:
    """The file's bytes, if it is a regular file of at most `limit` bytes.

    `follow=False` refuses a symlink at the last component (O_NOFOLLOW): a saved capture's
    part must be the file in that directory, not a link to ~/.ssh/id_ed25519. Raises
    RefusedFile (not a regular file, too large, a symlink) or OSError (missing, no
    permission) with the file named in `filename`."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:
            raise RefusedFile(path, "a symbolic link (not followed)") from None
        if exc.errno == errno.ENXIO:  # a UNIX socket: open() says "No such device"
            raise RefusedFile(path, "not a regular file (a socket)") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RefusedFile(path, f"not a regular file ({kind_of(st.st_mode)})")
        if st.st_size > limit:
            raise RefusedFile(path, f"too large ({_size(st.st_size)}; at most {_size(limit)})")
        chunks: list[bytes] = []
        got = 0
        while got <= limit:  # the size can change under us: never read past limit + 1
            chunk = os.read(fd, min(limit + 1 - got, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise RefusedFile(path, f"too large (more than {_size(limit)})")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], *, limit: int, follow: bool = True) -> str:
    """`read_bytes` decoded as UTF-8, invalid bytes as U+FFFD (never an exception)."""
    return read_bytes(path, limit=limit, follow=follow).decode("utf-8", errors="replace")


def check_regular(path: str | os.PathLike[str], *, limit: int) -> None:
    """Refuse now what a library would later open and read blindly (asyncssh reads an
    identity_file with a plain `open().read()`, on the event loop): a FIFO, a device, a
    huge file. A missing file passes: the library says that in its own words."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise RefusedFile(path, f"not a regular file ({kind_of(st.st_mode)})")
    if st.st_size > limit:
        raise RefusedFile(path, f"too large ({_size(st.st_size)}; at most {_size(limit)})")


def create_private(path: str | os.PathLike[str], data: bytes) -> None:
    """Write a new file 0600: O_EXCL (a file already there, or a planted symlink, is never
    written through) and O_NOFOLLOW. Raises FileExistsError when the name is taken."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
