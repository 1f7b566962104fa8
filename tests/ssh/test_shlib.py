"""The sh library of remote scripts (gpudash/shlib.sh), run for real under dash, busybox sh and
bash, as the library text and as the one line the exec string carries: `kill_group` stops a
whole process group (KILL for what ignores TERM, once its grace is up, and no waiting once
the group is gone), `kill_timer` enforces a limit as `timeout -k` does, and the sudo
fallback signals a group run under sudo only when the caller says it ran one.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.shlib import GRACES, LIB, one_line
from tests.support.tools import busybox_sh, require


def _shells() -> dict[str, tuple[str, ...]]:
    return {"dash": (require("dash"),), "busybox": busybox_sh(), "bash": (require("bash"),)}


SHELL_NAMES = ("dash", "busybox", "bash")
FORMS = {"lib": LIB, "one_line": one_line()}


class Group:
    """A process group of marker-named sleeps (its own session), optionally deaf to TERM;
    `alone`: the one sleep leads it. Its leader is reaped here at once (a thread waits on
    it): a zombie counts as alive for `kill -0`, so a group whose leader is never reaped
    never ends. Members orphaned by a kill are the init's to reap, which may be late: the
    tests that time the end of a group use a lone leader."""

    def __init__(self, folder: Path, *, deaf: bool, seconds: int = 300, alone: bool = False):
        self.marker = f"gd-shlib-{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / self.marker).symlink_to(shutil.which("sleep") or "/bin/sleep")
        trap = "trap '' TERM; " if deaf else ""
        cmd = f"{trap}{self.marker} {seconds} & {self.marker} {seconds + 1}; wait"
        if alone:
            cmd = f"{trap}exec {self.marker} {seconds}"
        env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
        self.proc = subprocess.Popen(["sh", "-c", cmd], env=env, start_new_session=True)
        self.pgid = self.proc.pid
        threading.Thread(target=self.proc.wait, daemon=True).start()
        deadline = time.monotonic() + 5
        while len(self.alive()) < (1 if alone else 2) and time.monotonic() < deadline:
            time.sleep(0.02)

    def alive(self) -> list[str]:
        """The group's marker processes still running (zombies awaiting a late reaper aside)."""
        ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
        return [
            line for line in ps.splitlines() if self.marker in line and not line.startswith("Z")
        ]

    def gone_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        return not self.alive()

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, 9)


@pytest.fixture
def groups(tmp_path: Path) -> Iterator[list[Group]]:
    made: list[Group] = []
    yield made
    for group in made:
        group.close()


def run_lib(shell: str, form: str, call: str, **env: str) -> tuple[float, str]:
    """Seconds the call took under `shell`, with the library in `form` before it."""
    start = time.monotonic()
    done = subprocess.run(
        [*_shells()[shell], "-c", f"{FORMS[form]}\n{call}\necho rc=$?"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    return time.monotonic() - start, done.stdout + done.stderr


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_kill_group_kills_what_ignores_term_once_its_grace_is_up(
    shell: str, form: str, groups: list[Group], tmp_path: Path
):
    group = Group(tmp_path / "bin", deaf=True)
    groups.append(group)
    took, out = run_lib(shell, form, f"kill_group {group.pgid} 1")
    assert out.strip() == "rc=0"
    assert 0.9 <= took < 4, took  # TERM, the 1 s grace, KILL
    assert group.gone_within(3), group.alive()


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_kill_group_returns_as_soon_as_the_group_is_gone(
    shell: str, groups: list[Group], tmp_path: Path
):
    group = Group(tmp_path / "bin", deaf=False, alone=True)
    groups.append(group)
    took, out = run_lib(shell, "lib", f"kill_group {group.pgid} 10")
    assert out.strip() == "rc=0"
    assert took < 3, took  # not the 10 s grace
    assert group.gone_within(3), group.alive()


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_kill_group_of_nothing_is_a_quiet_success(shell: str):
    took, out = run_lib(shell, "lib", 'kill_group "" 10; kill_group 999999999 10')
    assert out.strip() == "rc=0"
    assert took < 2


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_kill_timer_stops_the_group_at_its_limit_and_leaves_its_mark(
    shell: str, form: str, groups: list[Group], tmp_path: Path
):
    group = Group(tmp_path / "bin", deaf=True)
    groups.append(group)
    mark = tmp_path / "timedout"
    took, out = run_lib(shell, form, f"kill_timer 1 1 -{group.pgid} {mark}")
    assert out.strip() == "rc=0"
    assert mark.exists()
    assert 1.9 <= took < 6, took  # the 1 s limit, then the 1 s grace
    assert group.gone_within(3), group.alive()


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_kill_timer_ends_with_what_it_watches(shell: str, groups: list[Group], tmp_path: Path):
    group = Group(tmp_path / "bin", deaf=False, seconds=1, alone=True)
    groups.append(group)
    mark = tmp_path / "timedout"
    took, out = run_lib(shell, "lib", f"kill_timer 30 5 -{group.pgid} {mark}")
    assert out.strip() == "rc=0"
    assert took < 5, took  # not the 30 s limit
    assert not mark.exists()


def test_every_grace_says_why_and_the_exec_line_keeps_the_login_shells_rules():
    assert all(g.seconds > 0 and len(g.why) > 20 for g in GRACES.values())
    line = one_line()
    assert not any(c in line for c in "'\\!\n"), "see gpudash.transport.base.script_command"


# --- the sudo fallback, with a real unprivileged user and real sudo ---------------------------

SUDO_USER = "gpudash-shlib"


@pytest.fixture
def sudo_user() -> Iterator[str]:
    """A real user allowed `sudo -n kill` and nothing else (sudoers.d, removed after)."""
    if os.geteuid() != 0:
        pytest.fail("this test creates a user: run the suite as root (CI does)")
    require("sudo")
    try:
        pwd.getpwnam(SUDO_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", SUDO_USER], check=True)
    rule = Path("/etc/sudoers.d") / f"gpudash-shlib-{uuid.uuid4().hex[:8]}"
    kill = shutil.which("kill") or "/bin/kill"
    rule.write_text(f"{SUDO_USER} ALL=(root) NOPASSWD: {kill}\n")
    rule.chmod(0o440)
    yield SUDO_USER
    rule.unlink()


@pytest.mark.parametrize("asked", [True, False])
def test_the_sudo_fallback_stops_a_root_group_only_when_asked(
    asked: bool, sudo_user: str, groups: list[Group], tmp_path: Path
):
    group = Group(tmp_path / "bin", deaf=True)  # root's, as a task run under sudo is
    groups.append(group)
    script = f"{LIB}\nGD_SUDO={'1' if asked else ''}\nkill_group {group.pgid} 1\necho rc=$?"
    done = subprocess.run(
        ["runuser", "-u", sudo_user, "--", require("dash"), "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.stdout.strip() == "rc=0", done.stdout + done.stderr
    if asked:
        assert group.gone_within(3), group.alive()
    else:
        assert not group.gone_within(1), "a plain user's kill reached root's group"
