"""What every section owes the probe: the module contract, POSIX sh, totality, safety."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudash.probe.parts import Part
from gpudash.probe.registry import SECTION_NAMES
from tests.support.sectionrun import busybox_sh, run_raw, run_section, script_of
from tests.support.tools import require

SECTIONS = tuple(importlib.import_module(f"gpudash.probe.sections.{n}") for n in SECTION_NAMES)
IDS = [m.NAME for m in SECTIONS]
CONFIG = {
    "GPUDASH_MODEL_DIRS": "/root/models\n~/models\n~/.cache/huggingface/hub",
    "GPUDASH_VENV_PATHS": "~/.venv\n~/venv\n~/venvs/*\n/opt/*/.venv",
    "GPUDASH_NET_TARGETS": "http://127.0.0.1:9/",
    "GPUDASH_NET_TIMEOUT": "1",
}
SHELLS = [("/bin/sh", "-n"), ("dash", "-n"), ("busybox", "sh", "-n")]


@pytest.mark.parametrize("module", SECTIONS, ids=IDS)
def test_section_module_has_the_contract_the_registry_reads(module: ModuleType) -> None:
    assert module.__name__.rsplit(".", 1)[-1] == module.NAME
    assert isinstance(module.TIMEOUT, float) and 0 < module.TIMEOUT <= 30
    assert isinstance(module.BODY, str) and "part " in module.BODY
    result = module.parse({})
    assert dataclasses.is_dataclass(result) and isinstance(result.notes, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.notes = ()  # type: ignore[misc]
    json.dumps(dataclasses.asdict(result))


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: Path(s[0]).name)
@pytest.mark.parametrize("module", SECTIONS, ids=IDS)
def test_section_body_is_valid_posix_sh(
    module: ModuleType, shell: tuple[str, ...], tmp_path: Path
) -> None:
    if not shell[0].startswith("/"):
        require(shell[0])
    script = tmp_path / "s.sh"
    script.write_text(script_of(module))
    done = subprocess.run([*shell, str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("module", SECTIONS, ids=IDS)
def test_section_runs_on_this_machine_without_shell_errors(
    module: ModuleType, tmp_path: Path
) -> None:
    environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), **CONFIG}
    for shell in [("/bin/sh",), busybox_sh()]:
        text, _, took = run_raw(module, environment, shell=shell)
        for bad in ("Syntax error", "syntax error", "Bad substitution", "unexpected", "applet"):
            assert bad not in text, text
        assert took < module.TIMEOUT
        _, result = run_section(module, environment, shell=shell)
        json.dumps(dataclasses.asdict(result))


@pytest.mark.parametrize("module", SECTIONS, ids=IDS)
def test_section_never_executes_config_values(module: ModuleType, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = f'$(touch {marker})\n`touch {marker}`\n;touch {marker}\n\' "; touch {marker}; "'
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GPUDASH_MODEL_DIRS": evil,
        "GPUDASH_VENV_PATHS": evil,
        "GPUDASH_NET_TARGETS": "\n".join(f"http://127.0.0.1:9/{v}" for v in evil.split("\n")),
        "GPUDASH_NET_TIMEOUT": "1; touch " + str(marker),
        "HF_HOME": evil,
        "HF_HUB_CACHE": evil,
    }
    run_raw(module, environment)
    assert not marker.exists()


# Inputs for the parsers: the part names the bodies print, numbered parts, and lines that
# look like the bodies' tab-separated records, mixed with arbitrary text.
_NAMES = st.sampled_from(
    ["hostname", "os", "kernel", "arch", "cpu", "ncpu", "meminfo", "uptime", "nvccs", "nvcc.1",
     "nvcc.x", "cuda", "driver", "libs", "pythons", "pip", "tools", "vars", "venvs", "df",
     "dir.1", "dir.2", "token", "flags", "target.1", "target.9", ""]
)  # fmt: skip
_TAGS = st.sampled_from(
    ["0", "1", "python", "version", "tool", "meta", "venv", "cfg", "site", "dist", "torchpy",
     "condapy", "link", "install", "nvcc", "json", "txt", "lib", "wheel", "header", "define",
     "dir", "model", "config", "weights", "size", "index", "missing", "shards", "rev",
     "partial", "nosnapshot", "fs", "url", "host", "dns", "addr", "curl", "wget", "status",
     "err", "MemTotal:", "PRETTY_NAME=", "env", "file", "proxy", "HF_HUB_OFFLINE="]
)  # fmt: skip
_FIELD = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"-?\d{1,20}(\.\d{0,5})?", fullmatch=True),
    st.sampled_from(["/", "/a/b", "torch-2.1+cu121.dist-info", "000 0.1", "1", "x:y", "{"]),
)
_LINE = st.one_of(
    st.text(max_size=60),
    st.builds(lambda t, fs: "\t".join([t, *fs]), _TAGS, st.lists(_FIELD, max_size=4)),
)
_TEXT = st.lists(_LINE, max_size=12).map("\n".join)
_PARTS = st.dictionaries(
    _NAMES,
    st.tuples(st.one_of(st.none(), st.integers(-300, 300)), _TEXT),
    max_size=8,
).map(lambda d: {n: Part(n, rc, text) for n, (rc, text) in d.items()})


@pytest.mark.parametrize("module", SECTIONS, ids=IDS)
@settings(max_examples=300, deadline=None)
@given(parts=_PARTS)
def test_section_parse_never_raises_and_stays_serialisable(
    module: ModuleType, parts: dict[str, Part]
) -> None:
    result = module.parse(parts)
    json.dumps(dataclasses.asdict(result))
