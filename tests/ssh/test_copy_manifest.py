"""The direct copy's manifest (`direct_scripts.MANIFEST_FN`) run by a real shell: the hasher it
picks (OpenSSL's sha256, else coreutils' sha256sum) changes nothing a verification compares,
and a file that got no digest can never make two manifests match.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpudash.tasks.copy import direct_scripts as ds
from tests.support.tools import require


def manifest(tree: Path, out: Path, sha: str = "") -> str:
    """MANIFEST_FN's `manifest TREE OUT` in sh; `sha` forces the hasher ("" lets it pick)."""
    script = ds.MANIFEST_FN + (f"SHA='{sha}'\n" if sha else "") + f'manifest "{tree}" "{out}"\n'
    subprocess.run(["sh", "-c", script], check=True, timeout=60)
    return out.read_bytes().decode()  # read_text turns a carriage return into a newline


def make(root: Path) -> Path:
    tree = root / "t"
    (tree / "d" / "e").mkdir(parents=True)
    (tree / "d" / "e" / "small.txt").write_text("hello\n")
    (tree / "run.sh").write_text("#!/bin/sh\n")
    (tree / "run.sh").chmod(0o755)
    (tree / "big.bin").write_bytes(os.urandom(9 * 1024 * 1024))  # the one-per-hasher path
    (tree / "empty").write_bytes(b"")
    (tree / "link").symlink_to("d/e/small.txt")
    return tree


def test_openssl_and_sha256sum_manifests_are_the_same_lines(tmp_path: Path):
    require("openssl")
    tree = make(tmp_path)
    picked = manifest(tree, tmp_path / "m1")
    coreutils = manifest(tree, tmp_path / "m2", "sha256sum")
    forced = manifest(tree, tmp_path / "m3", "openssl dgst -sha256 -r")
    assert picked == coreutils == forced
    lines = {line.split("\t")[0]: line.split("\t") for line in picked.splitlines()}
    digest = subprocess.run(
        ["sha256sum", str(tree / "big.bin")], capture_output=True, text=True, check=True
    ).stdout.split()[0]
    assert lines["big.bin"][4] == digest
    assert lines["run.sh"][2] == "755" and lines["link"][5] == "d/e/small.txt"


def test_a_file_without_a_digest_never_matches_the_other_hosts_line(tmp_path: Path):
    # coreutils 9 escapes a carriage return in a name (its line starts with a backslash), so
    # the manifest finds no digest for that file: each host must then write its own mark
    tree = make(tmp_path)
    (tree / "a\rb").write_text("x")
    one = manifest(tree, tmp_path / "m1", "sha256sum")
    two = manifest(tree, tmp_path / "m2", "sha256sum")
    assert one != two
    differing = set(one.split("\n")) ^ set(two.split("\n"))
    assert {line.split("\t")[0] for line in differing} == {"a\rb"}
    assert all(line.split("\t")[4].startswith("unhashed-") for line in differing)
