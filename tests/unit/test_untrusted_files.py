"""gpudash.text and gpudash.files on their own: what the hostile-file attacks in
tests/ssh/test_hostile_files.py rely on, fast."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudash.files import RefusedFile, create_private, read_bytes
from gpudash.text import clean, clean_line


@pytest.mark.parametrize(
    "char", ["\u202a", "\u202e", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u200b",
             "\u200d", "\u2060", "\ufeff", "\u2028", "\u2029"],
)  # fmt: skip
def test_bidi_and_zero_width_characters_are_shown_not_obeyed(char: str) -> None:
    assert clean(f"a{char}b") == f"a<U+{ord(char):04X}>b"
    assert char not in clean_line(f"x{char}y")


def test_plain_text_and_ordinary_unicode_are_left_alone() -> None:
    text = "NVIDIA H200 — 141 GiB, naïve, 日本語\ttab\nline"
    assert clean(text) == text


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(RefusedFile, match="not a regular file \\(a FIFO\\)"):
        read_bytes(fifo, limit=100)


def test_a_file_past_its_cap_is_refused_and_a_symlink_when_not_followed(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(RefusedFile, match="too large"):
        read_bytes(big, limit=100)
    assert read_bytes(big, limit=101) == b"x" * 101
    link = tmp_path / "link"
    link.symlink_to(big)
    with pytest.raises(RefusedFile, match="symbolic link"):
        read_bytes(link, limit=1000, follow=False)


def test_create_private_never_writes_through_a_symlink_or_over_a_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(victim)
    with pytest.raises(FileExistsError):
        create_private(link, b"overwritten")
    assert victim.read_text() == "keep"
    create_private(tmp_path / "new", b"data")
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o600
