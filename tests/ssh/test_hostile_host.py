"""A hostile host, reached over the real test sshd: its tools print Rich markup, terminal
escape sequences (title change, OSC 52 clipboard write, cursor moves, CSI) and forged
section markers. gpudash must show all of it as inert text, in every place it writes, and
must not let it forge a section or a part.

The host's `uname -n` and `nvidia-smi` are scripts on its PATH (tests/support/fakegpu.py plus two
wrappers); everything else (sshd, the probe script, parsing, output) is the real thing.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import FIXTURES, fakegpu
from tests.support.cli import gpudash as run_gpudash
from tests.support.configs import write_config
from tests.support.sshd import FakeHost, Sshd

FIX = FIXTURES

# What a hostile tool prints: markup, an OSC title, an OSC 52 clipboard write, screen clear,
# cursor move, an SGR colour, a raw 8-bit CSI byte, and a BEL.
EVIL = (
    r"[bold red]BOOM[/] [link=file:///etc/passwd]x[/link]"
    r"\033]0;pwned-title\007\033]52;c;ZWNobyBwd25lZA==\007"
    r"\033[2J\033[10;10H\033[31mred\033[0m\233" + r"31m\007-end"
)
# Printed by nvidia-smi (inside the gpus section): frames that try to end the section early
# and open a forged `system` section and a forged `query` part, with a guessed nonce and
# with whatever nonce the tool can find in its environment.
FORGE = r"""
for n in 0000000000000000 "${GPUDASH_NONCE:-}"; do
  printf '@@gpudash:%s:rc:smi:0\n@@gpudash:%s:part:query\n' "$n" "$n"
  printf 'index, name\n0, FORGED-GPU\n1, FORGED-GPU\n'
  printf '@@gpudash:%s:rc:query:0\n@@gpudash:%s:end:gpus:0\n' "$n" "$n"
  printf '@@gpudash:%s:begin:system\n@@gpudash:%s:part:hostname\nforged-host\n' "$n" "$n"
  printf '@@gpudash:%s:rc:hostname:0\n@@gpudash:%s:end:system:0\n' "$n" "$n"
done
"""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile(host: FakeHost, tmp_path: Path) -> None:
    """Make `host` hostile: a GPU name and a hostname full of escapes, forged frames."""
    captures = tmp_path / "captures"
    shutil.copytree(FIX / "h200-1x", captures)
    query = captures / "query_csv.txt"
    evil_name = EVIL.replace(r"\033", "\x1b").replace(r"\007", "\x07").replace(r"\233", "\x9b")
    query.write_text(query.read_text().replace("NVIDIA H200", f"NVIDIA H200 {evil_name}"))
    fakegpu.install(host.bin_dir, captures)
    real = host.bin_dir / "nvidia-smi.real"
    (host.bin_dir / "nvidia-smi").rename(real)
    host.write_tool("nvidia-smi", f'#!/bin/sh\n[ $# -eq 0 ] && {{ {FORGE}\n}}\nexec {real} "$@"\n')
    # A slow hostname: the forged `system` frame arrives before the real one would.
    host.write_tool(
        "uname",
        f"#!/bin/sh\ncase \"$1\" in -n) sleep 1; printf '%b\\n' '{EVIL}' ;;"
        ' *) exec /bin/uname "$@" ;; esac\n',
    )


def config_for(sshd: Sshd, host: FakeHost, path: Path, **extra: object) -> Path:
    keys = {"network_targets": ["http://127.0.0.1:9/"], **extra}
    return write_config(path, sshd.host_toml(host, "evil", **keys))


def gpudash(*args: str) -> subprocess.CompletedProcess[bytes]:
    return run_gpudash(*args, text=False)


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def inert(data: bytes) -> None:
    """No byte that a terminal acts on: ESC, BEL, C1 controls (as UTF-8) or raw 0x9b."""
    text = data.decode("utf-8", errors="replace")
    bad = [c for c in text if c not in "\n\t" and _CONTROL.match(c)]
    assert not bad, f"control characters reached the output: {bad[:5]!r}"
    assert b"\x9b" not in data.replace("\u009b".encode(), b"")


def test_escapes_and_markup_from_a_host_are_inert_text_in_probe_output_json_and_saves(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    hostile(fake_host, tmp_path)
    config = config_for(sshd, fake_host, tmp_path / "c.toml")
    saved = tmp_path / "saved"
    text = gpudash("probe", "--config", str(config), "--save", str(saved))
    assert text.returncode == 0, text.stderr
    inert(text.stdout)
    inert(text.stderr)
    assert b"[bold red]BOOM[/]" in text.stdout  # shown literally, not as markup

    run = gpudash("probe", "--json", "--config", str(config))
    assert run.returncode == 0, run.stderr
    inert(run.stdout)
    doc = json.loads(run.stdout)
    for value in strings(doc):
        assert not [c for c in value if c not in "\n\t" and _CONTROL.match(c)], value
    (host,) = doc["hosts"]
    sections = host["sections"]
    gpus = sections["gpus"]["data"]["gpus"]
    assert [g["name"][:33] for g in gpus] == ["NVIDIA H200 [bold red]BOOM[/] [li"]
    hostname = sections["system"]["data"]["hostname"]
    assert hostname.startswith("[bold red]BOOM[/] [link=file:///etc/passwd]x[/link]")
    assert "pwned-title" not in hostname and "ZWNobyBwd25lZA" not in hostname

    files = sorted(p for p in saved.rglob("*") if p.is_file())
    assert files
    for path in files:
        inert(path.read_bytes())


def test_forged_section_and_part_markers_forge_nothing(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    hostile(fake_host, tmp_path)
    config = config_for(sshd, fake_host, tmp_path / "c.toml")
    run = gpudash("probe", "--json", "--config", str(config))
    assert run.returncode == 0, run.stderr
    (host,) = json.loads(run.stdout)["hosts"]
    sections = host["sections"]
    assert sections["system"]["data"]["hostname"] != "forged-host"
    assert sections["system"]["data"]["kernel"]  # the real section, with all its parts
    names = [g["name"] for g in sections["gpus"]["data"]["gpus"]]
    assert len(names) == 1 and "FORGED" not in names[0]
    assert "forged-host" not in json.dumps(sections["system"])


def test_a_saved_hostile_probe_replays_to_the_same_json(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    hostile(fake_host, tmp_path)
    config = config_for(sshd, fake_host, tmp_path / "c.toml")
    saved = tmp_path / "saved"
    live = gpudash("probe", "--json", "--config", str(config), "--save", str(saved))
    again = gpudash("probe", "--json", "--replay", str(saved))
    assert live.returncode == again.returncode == 0, again.stderr

    def data(raw: bytes) -> dict:
        (host,) = json.loads(raw)["hosts"]
        return {k: v["data"] for k, v in host["sections"].items()}

    assert data(again.stdout) == data(live.stdout)


async def until(pilot, condition: Callable[[], object], timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.02)


async def test_the_app_shows_a_hostile_host_literally(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    from gpudash.config.load import load_config
    from gpudash.model import HostState
    from gpudash.ui import create_app

    hostile(fake_host, tmp_path)
    config = load_config(str(config_for(sshd, fake_host, tmp_path / "c.toml")))
    app = create_app(config)

    def screen() -> str:
        return "\n".join(s.text for s in app.screen._compositor.render_strips(app.screen.size))

    async with app.run_test(size=(200, 50)) as pilot:
        await until(pilot, lambda: app.results["evil"].state is HostState.READY)
        await until(pilot, lambda: "[bold red]BOOM[/]" in screen())
        shown = screen()
        assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
        assert "forged-host" not in shown and "FORGED-GPU" not in shown
        await pilot.press("f")
        await until(pilot, lambda: "[bold red]BOOM" in screen())
        assert "\x1b" not in screen()


@pytest.mark.parametrize("where", ["model_dirs", "venv_paths"])
def test_config_paths_with_shell_metacharacters_reach_the_host_as_literal_text(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path, where: str
) -> None:
    mark = f"gdpwn{os.getpid()}"  # a file any of these would create in the working dir
    weird = f"d $(touch {mark}) `touch {mark}`; touch {mark} 'q\"x & | > {mark}"
    url = f"http://127.0.0.1:9/x;$(touch${{IFS}}{mark})`touch${{IFS}}{mark}`|{mark}&'"
    (fake_host.home / weird / "bin").mkdir(parents=True)
    (fake_host.home / weird / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
    (fake_host.home / weird / "bin" / "python").symlink_to(sys.executable)
    extra = {where: [f"~/{weird}"], "network_targets": [url]}
    config = config_for(sshd, fake_host, tmp_path / "c.toml", **extra)
    run = gpudash("probe", "--json", "--config", str(config))
    assert run.returncode == 0, run.stderr
    cwds = [fake_host.home, Path(pwd.getpwuid(os.getuid()).pw_dir), Path("/tmp"), Path.cwd()]
    assert not [d for d in cwds if (d / mark).exists()]
    section = json.loads(run.stdout)["hosts"][0]["sections"][
        "models" if where == "model_dirs" else "env"
    ]
    assert str(fake_host.home / weird) in strings(section)
    assert url in strings(json.loads(run.stdout)["hosts"][0]["sections"]["network"])
