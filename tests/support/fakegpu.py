"""Fake GPU hosts: a bin dir whose `nvidia-smi`, `nvcc` and host tools print captured outputs.

These are the only stand-ins the suite uses, for machines without GPUs. Each capture set is a
folder of files named for the command that printed them (as in tests/fixtures/h200-1x/):

    smi.txt          nvidia-smi
    query_csv.txt    nvidia-smi --query-gpu=... --format=csv
    topo_m.txt       nvidia-smi topo -m
    nvlink_s.txt     nvidia-smi nvlink -s
    q.txt            nvidia-smi -q
    smi_L.txt        nvidia-smi -L
    nvcc.txt         nvcc --version
    dmesg.txt        dmesg                                 (the health section's kernel log)
    lspci.txt        lspci (any arguments: `lspci -D -d 10de:`)
    ibstat.txt       ibstat
    systemctl.txt    systemctl (`status nvidia-fabricmanager ...`)
    fm_version.txt   nv-fabricmanager --version

Where a host tool has no capture in the set it is not faked: the machine's own runs (its
dmesg, its sysfs), as it would on a real host without that fault.

A command with no capture in the set prints nothing and exits 0, which is what the real tool
does for `nvlink -s` on a machine without NVLink; the parsers then fall back as they would.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

_SMI = """#!/bin/sh
F={captures}
case "$*" in
  "") f=smi.txt ;;
  "-L") f=smi_L.txt ;;
  "-q") f=q.txt ;;
  "topo -m") f=topo_m.txt ;;
  "nvlink -s") f=nvlink_s.txt ;;
  --query-gpu=*) f=query_csv.txt ;;
  *) echo "fake nvidia-smi: no capture for: $*" >&2; exit 2 ;;
esac
[ -f "$F/$f" ] && exec cat "$F/$f"
exit 0
"""

_NVCC = """#!/bin/sh
exec cat {captures}/nvcc.txt
"""


_CAT = """#!/bin/sh
exec cat {capture}
"""

HOST_TOOLS = {
    "dmesg.txt": "dmesg",
    "lspci.txt": "lspci",
    "ibstat.txt": "ibstat",
    "systemctl.txt": "systemctl",
    "fm_version.txt": "nv-fabricmanager",
}
"""Host tools (not GPU tools) a capture set may fake: capture file -> command."""


def install(bin_dir: Path, captures: dict[str, Path] | Path) -> Path:
    """Put fake `nvidia-smi` (and `nvcc` when captured) into `bin_dir`.

    `captures` is a capture folder, or a mapping from the file names above to capture files
    (to assemble a host from public captures of different commands).
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    store = bin_dir.parent / "captures"
    if store.exists():
        shutil.rmtree(store)
    store.mkdir(parents=True)
    files = {p.name: p for p in captures.iterdir()} if isinstance(captures, Path) else captures
    for name, path in files.items():
        shutil.copyfile(path, store / name)
    quoted = shlex.quote(str(store))
    _script(bin_dir / "nvidia-smi", _SMI.format(captures=quoted))
    if (store / "nvcc.txt").exists():
        _script(bin_dir / "nvcc", _NVCC.format(captures=quoted))
    for capture, tool in HOST_TOOLS.items():
        if (store / capture).exists():
            _script(bin_dir / tool, _CAT.format(capture=shlex.quote(str(store / capture))))
    return store


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)
