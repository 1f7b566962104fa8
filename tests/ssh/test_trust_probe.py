"""Trust under attack (issue 20, items 1 and 3), against real sshd hosts.

A host counts as answered only when the probe script really ran: its start marker and its
exit marker arrived and its exit status was 0. A host whose sshd forces `/usr/sbin/nologin`
never runs it and must fail with the remote's own line; a host without `timeout` on PATH still
answers, under a shell kill timer, and says so. A tool on the host that scans every process's
command line, environment and the script files they name cannot learn the framing nonce.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudash.transport.base import RemoteProcess
from gpudash.transport.ssh import SshPool
from tests.support import FIXTURES, fakegpu
from tests.support.cli import gpudash
from tests.support.configs import write_config
from tests.support.sshd import FakeHost, Sshd

NOLOGIN, NO_TIMEOUT, NO_SETSID = 0, 1, 2


def _path_without_timeout(folder: Path, *, also: tuple[str, ...] = ()) -> str:
    """A PATH with every system command but `timeout` (and `also`) as symlinks, as on a
    minimal image."""
    folder.mkdir(parents=True, exist_ok=True)
    for system in ("/usr/local/bin", "/usr/bin", "/bin"):
        if not os.path.isdir(system):
            continue
        for name in os.listdir(system):
            link = folder / name
            if name != "timeout" and name not in also and not os.path.lexists(link):
                link.symlink_to(os.path.join(system, name))
    return str(folder)


@pytest.fixture(scope="module")
def hostile_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    root = tmp_path_factory.mktemp("trust-sshd")
    bare = _path_without_timeout(root / "no-timeout-bin")
    bare_of_setsid = _path_without_timeout(root / "no-setsid-bin", also=("setsid",))
    server = Sshd(
        root,
        host_options={NOLOGIN: ("ForceCommand /usr/sbin/nologin",)},
        host_path={
            NO_TIMEOUT: f"{root}/hosts/h{NO_TIMEOUT}/bin:{bare}",
            NO_SETSID: f"{root}/hosts/h{NO_SETSID}/bin:{bare_of_setsid}",
        },
    )
    server.start()
    try:
        yield server
    finally:
        server.close()


def config(sshd: Sshd, host: FakeHost, path: Path, **extra: object) -> Path:
    keys = {"network_targets": ["http://127.0.0.1:9/"], "connect_timeout": 5, **extra}
    return write_config(path, sshd.host_toml(host, **keys))


def test_a_host_that_forces_nologin_is_failed_with_its_own_line_not_answered(
    hostile_sshd: Sshd, tmp_path: Path
) -> None:
    host = hostile_sshd.hosts[NOLOGIN]
    cfg = config(hostile_sshd, host, tmp_path / "c.toml")

    probe = gpudash("probe", "--config", str(cfg))
    assert probe.returncode == 1, probe.stdout + probe.stderr
    assert "0 of 1 hosts answered" in probe.stdout
    assert "This account is currently not available." in probe.stdout
    assert "FAILED" in probe.stdout

    doc = json.loads(gpudash("probe", "--json", "--config", str(cfg)).stdout)
    (result,) = doc["hosts"]
    assert result["state"] == "failed"
    assert "the probe did not run: This account is currently not available." in result["error"]

    check = gpudash("check", "--config", str(cfg))
    assert check.returncode == 1, check.stdout + check.stderr


def test_a_host_without_timeout_on_path_is_probed_under_a_shell_timer_and_says_so(
    hostile_sshd: Sshd, tmp_path: Path
) -> None:
    host = hostile_sshd.hosts[NO_TIMEOUT]
    host.reset()
    fakegpu.install(host.bin_dir, FIXTURES / "h200-1x")
    # nvidia-smi hangs when asked for the topology: only the kill timer can end that section.
    real = host.bin_dir / "nvidia-smi.real"
    (host.bin_dir / "nvidia-smi").rename(real)
    host.write_tool(
        "nvidia-smi", f'#!/bin/sh\n[ "$1" = topo ] && exec sleep 60\nexec {real} "$@"\n'
    )
    probe_check = subprocess.run(
        hostile_sshd.ssh_argv(host, "command -v timeout || echo none"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert probe_check.stdout.strip() == "none"  # the host really lacks it

    cfg = config(hostile_sshd, host, tmp_path / "c.toml", section_timeout=3)
    start = time.monotonic()
    run = gpudash("probe", "--json", "--config", str(cfg))
    took = time.monotonic() - start
    assert run.returncode == 0, run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["hosts"]
    assert result["state"] == "ready"
    assert any("no `timeout` on the host's PATH" in note for note in result["notes"])
    sections = result["sections"]
    assert sections["gpus"]["data"]["gpus"][0]["name"].startswith("NVIDIA H200")
    assert sections["system"]["data"]["hostname"]
    assert sections["topology"]["error"] == "timed out after 3s"
    assert took < 20, f"the kill timer did not stop the hung section ({took:.1f}s)"

    text = gpudash("probe", "--config", str(cfg))
    assert text.returncode == 0
    assert "no `timeout` on the host's PATH" in text.stdout


def _hang_topology(host: FakeHost) -> str:
    """Make `nvidia-smi topo -m` start two long sleeps (one in the background, one in the
    foreground) and wait, as a wedged driver call does; returns the marker in their argv.

    The sleeps run as a symlink to `sleep` named with the marker, so `pgrep -f` finds exactly
    them (GNU `sleep` would refuse an extra marker argument)."""
    marker = f"gd-orphan-{uuid.uuid4().hex[:12]}"
    (host.bin_dir / marker).symlink_to(shutil.which("sleep") or "/bin/sleep")
    fakegpu.install(host.bin_dir, FIXTURES / "h200-1x")
    real = host.bin_dir / "nvidia-smi.real"
    (host.bin_dir / "nvidia-smi").rename(real)
    host.write_tool(
        "nvidia-smi",
        f'#!/bin/sh\n[ "$1" = topo ] && {{ {marker} 300 & {marker} 301; wait; }}\n'
        f'exec {real} "$@"\n',
    )
    return marker


def _survivors(marker: str, within: float = 8.0) -> list[str]:
    """The processes whose command line holds `marker`, once they had `within` s to go."""
    deadline = time.monotonic() + within
    while True:
        found = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
        left = [line for line in found.splitlines() if line.strip()]
        if not left or time.monotonic() > deadline:
            for line in left:  # do not leave them behind for the next test
                subprocess.run(["kill", "-KILL", line.split()[0]], capture_output=True)
            return left
        time.sleep(0.2)


def test_a_timed_out_section_without_timeout_on_path_has_its_whole_tree_stopped(
    hostile_sshd: Sshd, tmp_path: Path
) -> None:
    """Where `timeout` is missing, the shell kill timer stops the section's tools, not just
    its shell: `nvidia-smi` and both sleeps it started are gone when the probe returns."""
    host = hostile_sshd.hosts[NO_TIMEOUT]
    host.reset()
    marker = _hang_topology(host)
    cfg = config(hostile_sshd, host, tmp_path / "c.toml", section_timeout=2)
    run = gpudash("probe", "--json", "--config", str(cfg))
    assert run.returncode == 0, run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["hosts"]
    assert result["sections"]["topology"]["error"] == "timed out after 2s"
    assert _survivors(marker) == []


def test_a_whole_probe_timeout_without_timeout_on_path_stops_every_section_tree(
    hostile_sshd: Sshd, tmp_path: Path
) -> None:
    """The whole-script timer (probe_timeout, no `timeout` on PATH) stops the script, and
    through its traps every section's tools: a hung section with a long section timeout
    leaves nothing running on the host."""
    host = hostile_sshd.hosts[NO_TIMEOUT]
    host.reset()
    marker = _hang_topology(host)
    cfg = config(hostile_sshd, host, tmp_path / "c.toml", section_timeout=120, probe_timeout=3)
    start = time.monotonic()
    run = gpudash("probe", "--json", "--config", str(cfg))
    took = time.monotonic() - start
    assert run.returncode == 1, run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["hosts"]
    assert result["state"] == "failed"
    assert took < 30
    assert _survivors(marker) == []


def test_a_host_without_timeout_nor_setsid_still_answers_and_says_tools_may_survive(
    hostile_sshd: Sshd, tmp_path: Path
) -> None:
    """Without `setsid` a section cannot have a process group of its own: the kill timer
    still ends the section (its shell), and the host's notes say that its tools may not."""
    host = hostile_sshd.hosts[NO_SETSID]
    host.reset()
    marker = _hang_topology(host)
    cfg = config(hostile_sshd, host, tmp_path / "c.toml", section_timeout=2)
    run = gpudash("probe", "--json", "--config", str(cfg))
    _survivors(marker, within=0)  # stops what was left (the note says it may be)
    assert run.returncode == 0, run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["hosts"]
    assert result["state"] == "ready"
    assert result["sections"]["topology"]["error"] == "timed out after 2s"
    assert any("nor `setsid`" in note for note in result["notes"]), result["notes"]


async def _drain(process: RemoteProcess) -> tuple[bytes, int | None]:
    out = b"".join([chunk async for chunk in process.chunks()])
    return out, await process.wait()


@pytest.mark.parametrize("how", ["start", "start_input"])
async def test_the_remote_kill_timer_without_timeout_stops_the_commands_whole_group(
    hostile_sshd: Sshd, how: str
) -> None:
    """Any script run with a remote timeout on a host without `timeout` (a task's control
    script, a copy's receiving end) is stopped with everything it started, as `timeout -k`
    stops its process group: not only the script's shell."""
    host = hostile_sshd.hosts[NO_TIMEOUT]
    host.reset()
    marker = f"gd-orphan-{uuid.uuid4().hex[:12]}"
    (host.bin_dir / marker).symlink_to(shutil.which("sleep") or "/bin/sleep")
    script = f"command -v timeout || echo no-timeout\n{marker} 300 & {marker} 301\n"
    pool = SshPool([])
    start = time.monotonic()
    try:
        transport = pool.transport(hostile_sshd.host_config(host))
        if how == "start":
            process = await transport.start(script, timeout=2)
        else:
            process = await transport.start_input(script, timeout=2)
        try:
            # bounded here: a timer that stopped only the shell leaves the sleeps holding
            # the channel open for 300 s
            out, status = await asyncio.wait_for(_drain(process), 20)
        finally:
            await process.close()
    finally:
        await pool.close()
    took = time.monotonic() - start
    assert out.decode().split() == ["no-timeout"]
    assert status != 0
    assert took < 15, f"the kill timer did not end the command ({took:.1f}s)"
    assert _survivors(marker) == []


# A hostile nvidia-smi: collects every 16-hex-digit string from every process's command line
# and environment, and from every file a command line names (the section script the nonce
# used to be written into), then prints, with each, frames that would end the gpus section
# early and forge a `system` section and a `query` part.
SCANNER = r"""#!/bin/sh
[ $# -eq 0 ] || exec "$0.real" "$@"
cands=$(for p in /proc/[0-9]*; do
  echo "$p" >>"$HOME/scanned"
  cat "$p/cmdline" "$p/environ" 2>/dev/null | tr '\0' '\n'
  for f in $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null); do [ -f "$f" ] && cat "$f"; done
done 2>/dev/null | grep -o '[0-9a-f]\{16\}' | sort -u)
printf '%s\n' $cands >"$HOME/candidates"
for n in $cands; do
  printf '@@gpudash:%s:rc:smi:0\n@@gpudash:%s:part:query\n' "$n" "$n"
  printf 'index, name\n0, FORGED-GPU\n'
  printf '@@gpudash:%s:rc:query:0\n@@gpudash:%s:end:gpus:0\n' "$n" "$n"
  printf '@@gpudash:%s:begin:system\n@@gpudash:%s:part:hostname\nforged-host\n' "$n" "$n"
  printf '@@gpudash:%s:rc:hostname:0\n@@gpudash:%s:end:system:0\n' "$n" "$n"
done
# and into the section FIFO by its path (beside the script the parent shell runs): a forged
# "system is done" and "gpus is done" for the foreground loop
script=$(tr '\0' '\n' <"/proc/$PPID/cmdline" | grep '/gpudash[.].*[.]sh$')
[ -p "${script%/*}/q" ] && printf 'system\ngpus\n' >"${script%/*}/q" && : >"$HOME/fifo"
exec "$0.real"
"""


def test_a_tool_scanning_every_process_cannot_learn_the_nonce_or_forge_a_section(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    fakegpu.install(fake_host.bin_dir, FIXTURES / "h200-1x")
    (fake_host.bin_dir / "nvidia-smi").rename(fake_host.bin_dir / "nvidia-smi.real")
    fake_host.write_tool("nvidia-smi", SCANNER)
    # a slow hostname: a forged `system` frame would arrive before the real one
    fake_host.write_tool(
        "uname",
        '#!/bin/sh\n[ "$1" = -n ] && { sleep 1; echo real-host; exit; }\nexec /bin/uname "$@"\n',
    )
    cfg = config(sshd, fake_host, tmp_path / "c.toml")
    run = gpudash("probe", "--json", "--config", str(cfg))
    assert run.returncode == 0, run.stdout + run.stderr
    scanned = (fake_host.home / "scanned").read_text().split()
    assert len(scanned) > 5, "the scanner did not see the host's processes"
    assert (fake_host.home / "fifo").exists(), "the scanner did not reach the section FIFO"
    (result,) = json.loads(run.stdout)["hosts"]
    sections = result["sections"]
    assert sections["system"]["data"]["hostname"] == "real-host"
    names = [g["name"] for g in sections["gpus"]["data"]["gpus"]]
    assert names and "FORGED-GPU" not in names
    assert sections["gpus"]["error"] is None


TIMED_TASKS = """
[tasks.quick]
title = "a task well within its limit"
kind = "script"
timeout = "30s"
run = 'echo done quickly'

[tasks.slow]
title = "a task over its limit"
kind = "script"
timeout = "2s"
run = '''
echo started
MARKER 300 &
MARKER 301
'''
"""


def test_a_task_on_a_host_without_timeout_is_held_to_its_limit_by_a_sh_timer(
    hostile_sshd: Sshd, tmp_path: Path
) -> None:
    """Every task has a time limit (the built-in ones 5 min to 6 h). Without `timeout` on
    the host the job wrapper enforces it itself, as `timeout -k` would (the whole process
    group, TERM then KILL), and says so, instead of failing every task with `setsid: failed
    to execute timeout`."""
    host = hostile_sshd.hosts[NO_TIMEOUT]
    host.reset()
    marker = f"gd-task-{uuid.uuid4().hex[:12]}"
    (host.bin_dir / marker).symlink_to(shutil.which("sleep") or "/bin/sleep")
    cfg = tmp_path / "c.toml"
    cfg.write_text(hostile_sshd.host_toml(host) + TIMED_TASKS.replace("MARKER", marker))

    quick = gpudash("run", "quick", "--yes", "--config", str(cfg))
    assert quick.returncode == 0, quick.stdout + quick.stderr
    assert f"{host.name} | done quickly" in quick.stdout.splitlines()
    assert "a kill timer in sh enforces the 30s limit" in quick.stdout

    start = time.monotonic()
    slow = gpudash("run", "slow", "--yes", "--config", str(cfg), timeout=90)
    took = time.monotonic() - start
    out = slow.stdout + slow.stderr
    assert slow.returncode != 0, out
    assert f"{host.name} | started" in slow.stdout.splitlines()
    assert "(timed out)" in out
    assert took < 30, f"the limit was not enforced ({took:.1f}s)"
    assert _survivors(marker) == []
