"""Wheels made here and now, a package index on loopback that serves them, and uv.

A wheel is a zip with a dist-info (METADATA, WHEEL, RECORD with hashes), so a test can make
the package it installs without a build backend; `LoopbackIndex` serves PEP 503 "simple"
pages for them over real HTTP on 127.0.0.1, so uv resolves and downloads exactly as it does
from PyPI or the PyTorch index, and no traffic leaves the machine.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import shutil
import sys
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest

from tests.support.loopback_http import QuietHandler, serving


def normalized(name: str) -> str:
    """PEP 503's project name: runs of -_. become one -, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


def make_wheel(
    where: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    extras: tuple[str, ...] = (),
) -> Path:
    """`where/<name>-<version>-py3-none-any.whl` holding `files` (path -> text)."""
    stem = f"{re.sub(r'[-.]+', '_', name)}-{version}"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Provides-Extra: {extra}\n" for extra in extras)
    content = {path: text.encode() for path, text in files.items()}
    content[f"{stem}.dist-info/METADATA"] = metadata.encode()
    content[f"{stem}.dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: gpudash-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, data in content.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{stem}.dist-info/RECORD,,")
    content[f"{stem}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    where.mkdir(parents=True, exist_ok=True)
    wheel = where / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in content.items():
            archive.writestr(path, data)
    return wheel


class LoopbackIndex:
    """Package indexes under one HTTP root: `publish("whl/cu130", wheel)` makes
    `url("whl/cu130")` an index URL whose project page lists the wheel. `requests` records
    every path asked for, so a test can tell which index a tool went to."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = 0  # set once it is served (`loopback_index`)
        self.requests: list[str] = []

    def url(self, index: str) -> str:
        return f"http://127.0.0.1:{self.port}/{index}"

    def publish(self, index: str, wheel: Path) -> None:
        project = normalized(wheel.name.split("-", 1)[0])
        page = self.root / index / project
        page.mkdir(parents=True, exist_ok=True)
        target = page / wheel.name
        target.write_bytes(wheel.read_bytes())
        links = "".join(
            f'<a href="{html.escape(p.name)}">{html.escape(p.name)}</a>\n'
            for p in sorted(page.glob("*.whl"))
        )
        (page / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")


@contextmanager
def loopback_index(root: Path) -> Iterator[LoopbackIndex]:
    """A `LoopbackIndex` served from `root` on 127.0.0.1 while the block runs."""
    root.mkdir(parents=True, exist_ok=True)
    index = LoopbackIndex(root)

    class Handler(SimpleHTTPRequestHandler, QuietHandler):
        def do_GET(self) -> None:
            index.requests.append(self.path)
            super().do_GET()

    with serving(partial(Handler, directory=str(root))) as port:
        index.port = port
        yield index


LOCAL_PYTHON = {"UV_PYTHON_DOWNLOADS": "never", "UV_PYTHON": sys.executable}
"""A venv task's env in tests: uv makes it with this Python and never downloads one."""


def uv_path() -> str:
    """The uv the test extras installed beside this Python (or on PATH)."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        pytest.fail("uv not installed: pip install -e '.[test]' installs it")
    return found
