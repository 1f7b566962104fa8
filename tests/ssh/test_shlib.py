"""The sh library of remote scripts (gpudash/shlib.sh), run for real under dash, busybox sh and
bash, as the library text and as the one line the exec string carries: `kill_group` stops a
whole process group (KILL for what ignores TERM, once its grace is up, and no waiting once
the group is gone), `kill_timer` enforces a limit as `timeout -k` does, and the sudo
fallback signals a group run under sudo only when the caller says it ran one.

The copy's part (gpudash/shlib_copy.sh, `COPY_LIB`) under the same three shells, with a fake
`timeout` and `ssh` on PATH that print their arguments: the exact argument vector each of
`remote`, `dial` and `hold` gives ssh (the one-use key only, the one host key, the control
socket where it belongs), the ssh's exit status passed back, and `mux_dir`'s private socket
directory; and the probe's script does not carry it.
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

from gpudash.shlib import COPY_LIB, GRACES, LIB, one_line
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


# --- the copy's part: the sessions to a destination (gpudash/shlib_copy.sh) -------------------

# Each fake prints one line per argument (`NAME: ARG`), so a word split or a lost quote shows.
FAKE_TIMEOUT = """#!/bin/sh
for a in "$@"; do printf 'timeout: %s\\n' "$a"; done
shift 3
exec "$@"
"""
FAKE_SSH = """#!/bin/sh
for a in "$@"; do printf 'ssh: %s\\n' "$a"; done
exit "${FAKE_SSH_RC:-0}"
"""
COPY_ENV = {
    "K": "/j/files/id",
    "KH": "/j/files/known hosts",
    "GPUDASH_ADDR": "10.9.0.2",
    "GPUDASH_PORT": "2222",
    "GPUDASH_USER": "alice",
}


def ssh_argv(master: str, socket: str, *, alias: str = "gpudash-copy-dest") -> list[str]:
    """What `_ssh` gives ssh before the verb: the key alone, that host key alone, no agent,
    no config file, no prompt; then the control master and socket asked for."""
    return [
        *("-i", "/j/files/id", "-F", "/dev/null", "-o", "IdentitiesOnly=yes"),
        *("-o", "IdentityAgent=none", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"),
        *("-o", "UserKnownHostsFile=/j/files/known hosts"),
        *("-o", "GlobalKnownHostsFile=/dev/null", "-o", f"HostKeyAlias={alias}"),
        *("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"),
        *("-o", "ConnectTimeout=15", "-o", "LogLevel=ERROR"),
        *("-o", f"ControlMaster={master}", "-o", f"ControlPath={socket}"),
        *("-c", "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com"),
        *("-p", "2222", "-l", "alice", "10.9.0.2"),
    ]


def run_copy_lib(shell: str, call: str, tmp_path: Path, **env: str) -> tuple[list[str], str]:
    """The fakes' argument lines and the call's status line, `call` run under `shell` with
    the copy's library (and the fakes first on PATH)."""
    fakes = tmp_path / "fakes"
    fakes.mkdir(exist_ok=True)
    for name, text in (("timeout", FAKE_TIMEOUT), ("ssh", FAKE_SSH)):
        (fakes / name).write_text(text)
        (fakes / name).chmod(0o755)
    done = subprocess.run(
        [*_shells()[shell], "-c", f"{COPY_LIB}\n{call}\necho rc=$?"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **COPY_ENV, "PATH": f"{fakes}:{os.environ['PATH']}", **env},
    )
    lines = done.stdout.splitlines()
    assert done.stderr == "", done.stderr
    return [line for line in lines if not line.startswith("rc=")], lines[-1]


def argv_of(lines: list[str]) -> tuple[list[str], list[str]]:
    """(timeout's arguments, ssh's arguments) from the fakes' lines."""
    timeout = [line.removeprefix("timeout: ") for line in lines if line.startswith("timeout: ")]
    ssh = [line.removeprefix("ssh: ") for line in lines if line.startswith("ssh: ")]
    return timeout, ssh


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_remote_rides_the_control_socket_when_there_is_one_and_keeps_each_argument_whole(
    shell: str, tmp_path: Path
):
    grace = str(GRACES["ssh"].seconds)
    lines, status = run_copy_lib(shell, 'remote 60 verify "a b" c', tmp_path, CM="/tmp/cm/s")
    timeout, ssh = argv_of(lines)
    assert status == "rc=0"
    assert timeout[:3] == ["-k", grace, "60"]
    assert timeout[3:] == ["ssh", *ssh]
    assert ssh == [*ssh_argv("no", "/tmp/cm/s"), "verify", "a b", "c"]
    lines, _ = run_copy_lib(shell, "remote 15 abort", tmp_path, CM="")
    timeout, ssh = argv_of(lines)
    assert timeout[:3] == ["-k", grace, "15"]
    assert ssh == [*ssh_argv("no", "none"), "abort"]  # no socket: ssh dials on its own


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_dial_is_always_its_own_connection_and_hold_is_the_master(shell: str, tmp_path: Path):
    lines, _ = run_copy_lib(shell, "dial 0 recv h2 22 bob", tmp_path, CM="/tmp/cm/s")
    timeout, ssh = argv_of(lines)
    assert timeout[:3] == ["-k", str(GRACES["ssh"].seconds), "0"]
    assert ssh == [*ssh_argv("no", "none"), "recv", "h2", "22", "bob"]
    alias = {"GPUDASH_ALIAS": "gpudash-copy-d2"}
    lines, _ = run_copy_lib(shell, "hold manifest", tmp_path, CM="/tmp/cm/s", **alias)
    timeout, ssh = argv_of(lines)
    assert timeout[:3] == ["-k", str(GRACES["ssh"].seconds), "0"]  # no limit: it is watched
    assert ssh == [*ssh_argv("yes", "/tmp/cm/s", alias="gpudash-copy-d2"), "hold", "manifest"]
    lines, _ = run_copy_lib(shell, "hold", tmp_path, CM="")
    assert argv_of(lines)[1] == [*ssh_argv("no", "none"), "hold"]


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_remote_passes_back_the_status_of_its_ssh(shell: str, tmp_path: Path):
    _, status = run_copy_lib(shell, "remote 5 ping", tmp_path, CM="", FAKE_SSH_RC="255")
    assert status == "rc=255"


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_mux_dir_makes_a_private_directory_for_a_short_socket_path(shell: str, tmp_path: Path):
    call = 'mux_dir; echo "CMD=$CMD"; echo "CM=$CM"; stat -c %a "$CMD"; rm -rf "$CMD"'
    lines, status = run_copy_lib(shell, call, tmp_path)
    assert status == "rc=0"
    cmd = lines[0].removeprefix("CMD=")
    assert cmd.startswith("/tmp/gpudash-cm.") and len(cmd) == len("/tmp/gpudash-cm.XXXXXX")
    assert lines[1] == f"CM={cmd}/s"
    assert lines[2] == "700"
    assert len(lines[1]) < 100  # a socket's path must fit sun_path (108 bytes on Linux)


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_a_killed_beat_lets_its_reader_see_the_end_at_once(shell: str, tmp_path: Path):
    # the hold session ends when its beat's output closes: a fan-out's destination job waited
    # up to 2 s for it when a `sleep 2` in the beat held the fifo open after the kill
    call = (
        'mkfifo "$T/f"; beat > "$T/f" & b=$!; exec 3< "$T/f"; head -c 1 <&3; echo; '
        's=$(date +%s%N); kill "$b"; cat <&3 > /dev/null; e=$(date +%s%N); '
        'echo "took $(( (e - s) / 1000000 ))"'
    )
    lines, status = run_copy_lib(shell, call, tmp_path, T=str(tmp_path))
    assert status == "rc=0"
    assert lines[0] == "."  # a beat: one byte, within its first 2 s
    took = int(lines[1].removeprefix("took "))
    assert took < 1000, lines


def test_the_copy_part_stays_out_of_the_probe_and_the_copy_scripts_carry_it():
    from gpudash.probe.registry import all_sections
    from gpudash.probe.script import build_script, make_plan
    from gpudash.tasks.copy.direct_scripts import SOURCE_JOB
    from gpudash.tasks.copy.fanout_scripts import FANOUT_JOB

    probe = build_script(make_plan(all_sections(), {}, 5))
    assert "kill_group()" in probe and "_ssh()" not in probe and "mux_dir()" not in probe
    assert COPY_LIB in SOURCE_JOB and COPY_LIB in FANOUT_JOB
    assert SOURCE_JOB.count("_ssh()") == 1 and FANOUT_JOB.count("_ssh()") == 1
