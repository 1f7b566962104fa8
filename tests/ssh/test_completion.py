"""Shell completion (issue 23, item 18): the bash script `gpudash completion bash` prints,
loaded into a real bash and driven as bash drives it on TAB, completes commands, options,
option values, and the hosts, tags and tasks of the config."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """\
[hosts.gpu1]
address = "10.0.0.1"
tags = ["h200"]
[hosts.gpu2]
address = "10.0.0.2"
tags = ["h200", "east"]
[hosts."b300-[01-02]"]
address = "10.0.0.[3-4]"
[tasks.hello]
title = "say hello"
kind = "script"
run = "echo hi"
"""


@pytest.fixture
def bash_complete(tmp_path: Path):
    config = tmp_path / "gpudash.toml"
    config.write_text(CONFIG)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "gpudash"  # the installed entry point, as the shell finds it on PATH
    launcher.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m gpudash "$@"\n')
    launcher.chmod(0o755)
    script = subprocess.run(
        [sys.executable, "-m", "gpudash", "completion", "bash"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (tmp_path / "gpudash.bash").write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "GPUDASH_CONFIG": str(config)}

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        driver = (
            f"source {shlex.quote(str(tmp_path / 'gpudash.bash'))}\n"
            f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
            f"COMP_CWORD={len(words) - 1}\n"
            "_gpudash\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
        )
        run = subprocess.run(
            ["bash", "--norc", "-c", driver], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        assert run.stderr == ""
        return [w for w in run.stdout.splitlines() if w]

    return complete


def test_bash_completes_commands_options_and_config_names(bash_complete):
    assert bash_complete("gpudash pr") == ["probe"]
    assert bash_complete("gpudash c") == ["check", "completion"]
    assert bash_complete("gpudash probe g") == ["gpu1", "gpu2"]
    assert bash_complete("gpudash check b300") == ["b300-01", "b300-02"]
    assert bash_complete("gpudash check --tag ") == ["h200", "east"]
    assert "hello" in bash_complete("gpudash run ")
    assert bash_complete("gpudash run hello gpu1 gpu") == ["gpu2"]  # a host named once
    assert bash_complete("gpudash check --format p") == ["prom"]
    assert bash_complete("gpudash check --fail-on ") == ["warn", "fail"]
    assert "--fail-on" in bash_complete("gpudash check --")
    assert bash_complete("gpudash parse s") == ["smi"]
    assert bash_complete("gpudash completion ") == ["bash", "zsh", "fish"]
    assert bash_complete("gpudash probe --replay gpudash.b") == []  # directories only
    assert bash_complete("gpudash probe --config gpudash.t") == ["gpudash.toml"]


def test_a_broken_config_completes_no_hosts_and_prints_nothing_into_the_prompt(
    bash_complete, tmp_path
):
    (tmp_path / "gpudash.toml").write_text("[hosts.a\n")
    assert bash_complete("gpudash probe ") == []
    assert bash_complete("gpudash pro") == ["probe"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_ask_gpudash_for_the_candidates(shell):
    script = subprocess.run(
        [sys.executable, "-m", "gpudash", "completion", shell],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "gpudash __complete" in script
    assert "@files" in script and "@dirs" in script
