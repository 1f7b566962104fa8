"""The copy task over the real test sshd: host -> gpudash -> host, every file's hash verified.

The fake hosts share one filesystem but each has its own HOME, so `~/src` on h0 and `~/dst`
on h1 are different directories. Faults are provoked with stand-in tools on one host's PATH
(a `tar` that corrupts what it unpacked, one that unpacks slowly), the real tar underneath.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gpudash.config.load import parse_config
from gpudash.config.model import ConfigError
from gpudash.tasks.copy import scripts as copy_scripts
from gpudash.tasks.copy.kind import run_copy
from gpudash.tasks.events import (
    TaskBlocked,
    TaskCancelled,
    TaskEvent,
    TaskFinished,
    TaskLost,
    TaskOutput,
    TaskSkipped,
    TaskStarted,
)
from gpudash.tasks.prepare import prepare
from gpudash.tasks.spec import TaskSpec, load_tasks
from gpudash.transport.base import Transport, TransportError
from gpudash.transport.local import LocalTransport
from gpudash.transport.replay import ReplayTransport
from gpudash.transport.ssh import SshPool
from tests.ssh.test_tasks_cli import write_config
from tests.support.cli import tree_of
from tests.support.sshd import FakeHost, Sshd
from tests.support.tools import require

ODD_NAME = 'it\'s a "name" with\nnewline.txt'
BIG = 6 * 1024 * 1024


def copy_spec(
    *, check: str | None = None, timeout: str | None = None, **params: object
) -> TaskSpec:
    table: dict[str, object] = {"params": {"from": "h0", "via": "gpudash", **params}}
    if check is not None:
        table["check"] = check
    if timeout is not None:
        table["timeout"] = timeout
    return load_tasks({"copy": table})["copy"]


def make_tree(root: Path) -> None:
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "deep.txt").write_text("deep\n")
    (root / "empty").mkdir()
    (root / "bin").mkdir()
    (root / "bin" / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "bin" / "run.sh").chmod(0o755)
    (root / "link").symlink_to("a/b/c/deep.txt")
    (root / ODD_NAME).write_text("odd\n")
    data = bytearray(os.urandom(BIG))
    data[4096] = 0  # the corrupting tar stand-in writes 0xff here
    (root / "big.bin").write_bytes(bytes(data))


async def collect(stream: AsyncIterator[object]) -> list[TaskEvent]:
    return [event async for event in stream]  # type: ignore[misc]


def lines_of(events: list[TaskEvent]) -> list[str]:
    return [line for e in events if isinstance(e, TaskOutput) for line in e.lines]


def copy_leftovers(hosts: list[FakeHost]) -> list[str]:
    """Processes still running in the sessions of these fake hosts (their HOME is the host's,
    set by sshd's SetEnv): either end's sh, tar, timeout or stand-in. Other tests' processes,
    on other homes, do not count."""
    homes = {f"HOME={h.home}".encode() for h in hosts}
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            env = set((proc / "environ").read_bytes().split(b"\0"))
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if env & homes:
            found.append(f"{proc.name} {args}")
    return found


@pytest.fixture
def two_hosts(
    sshd: Sshd, fake_hosts: list[FakeHost], ssh_pool: SshPool
) -> tuple[Transport, Callable[[str], Transport | None]]:
    """h1's transport (the destination) and the peer lookup that finds h0 (the source)."""
    by_name = {h.name: h for h in fake_hosts[:2]}

    def peer(name: str) -> Transport | None:
        host = by_name.get(name)
        return ssh_pool.transport(sshd.host_config(host)) if host else None

    dest = peer("h1")
    assert dest is not None
    return dest, peer


# --- the transport: data on stdin behind the script ----------------------------------------------


async def stdin_roundtrip(transport: Transport) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    process = await transport.start_input("exec sha256sum\n", timeout=30)
    try:
        sizes = [1, 100, 8191, 65536, 1 << 20]
        at = 0
        while at < len(data):
            size = sizes[(at // 7) % len(sizes)]
            await process.write(data[at : at + size])
            at += size
        await process.write_eof()
        out = b"".join([chunk async for chunk in process.chunks()])
        assert await process.wait() == 0
    finally:
        await process.close()
    assert out.split()[0].decode() == hashlib.sha256(data).hexdigest()


async def test_start_input_delivers_every_byte_behind_the_script_over_ssh(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
):
    await stdin_roundtrip(ssh_pool.transport(sshd.host_config(fake_host)))


async def test_start_input_delivers_every_byte_behind_the_script_locally():
    await stdin_roundtrip(LocalTransport(use_nvml=False))


async def test_a_shell_reading_its_script_from_a_pipe_would_swallow_the_data(tmp_path: Path):
    """Why start_input does not just append data after a `/bin/sh -s` script: sh buffers."""
    data = os.urandom(100_000)
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-s", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate(b"exec wc -c\n" + data)
    assert int(out) < len(data)


async def test_start_input_on_a_replay_is_a_clear_error(tmp_path: Path):
    with pytest.raises(TransportError, match="cannot stream input"):
        await ReplayTransport(tmp_path).start_input("cat\n")


async def test_a_plain_start_refuses_write():
    process = await LocalTransport(use_nvml=False).start("true\n")
    try:
        with pytest.raises(TransportError, match="takes no input"):
            await process.write(b"x")
    finally:
        await process.close()


async def test_bulk_channels_use_aes_gcm_unless_ssh_config_names_ciphers(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path
):
    """AES-GCM first (half asyncssh's CPU per byte) when the CPU has AES; ~/.ssh/config wins."""
    with open("/proc/cpuinfo") as f:
        has_aes = any(
            line.split(":")[0].strip() in ("flags", "Features") and "aes" in line.split()
            for line in f
        )
    pool = SshPool([])
    try:
        transport = pool.transport(sshd.host_config(fake_host))
        await transport.connect()
        cipher = transport._link.conn.get_extra_info("send_cipher")  # type: ignore[union-attr]
        assert cipher == ("aes128-gcm@openssh.com" if has_aes else "chacha20-poly1305@openssh.com")
    finally:
        await pool.close()
    (isolated_home / ".ssh").mkdir()
    (isolated_home / ".ssh" / "config").write_text("Host *\n  Ciphers aes256-ctr\n")
    pool = SshPool([])
    try:
        transport = pool.transport(sshd.host_config(fake_host))
        await transport.connect()
        cipher = transport._link.conn.get_extra_info("send_cipher")  # type: ignore[union-attr]
        assert cipher == "aes256-ctr"
    finally:
        await pool.close()


# --- the copy ----------------------------------------------------------------------------------


async def test_a_tree_arrives_identical_and_every_file_is_verified(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    src = fake_hosts[0].home / "src"
    make_tree(src)
    spec = copy_spec(path="~/src", to="~/deep/dst")
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskFinished), lines_of(events)
    assert events[-1].rc == 0, lines_of(events)
    dst = fake_hosts[1].home / "deep" / "dst"
    assert tree_of(dst) == tree_of(src)
    assert (dst / ODD_NAME).read_text() == "odd\n"
    assert os.access(dst / "bin" / "run.sh", os.X_OK)
    lines = lines_of(events)
    assert "verified: 4 files (6.0 MiB), 1 link, every sha256 matches" in lines
    assert any(line.startswith("copied 6.0 MiB / 6.0 MiB (100%) at ") for line in lines)
    partials = [e.partial for e in events if isinstance(e, TaskOutput) and e.partial]
    assert all(p.startswith("copied ") for p in partials)
    assert sorted(p.name for p in (fake_hosts[1].home / "deep").iterdir()) == ["dst"]
    started = next(e for e in events if isinstance(e, TaskStarted))
    log = Path(started.log_path).read_text()
    assert "verified: 4 files" in log and "# gpudash: rc 0" in log


async def test_a_corrupted_destination_fails_and_names_the_file(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    make_tree(fake_hosts[0].home / "src")
    # The destination's tar unpacks for real, then one byte of big.bin rots on its disk.
    fake_hosts[1].write_tool(
        "tar",
        '#!/bin/sh\n/bin/tar "$@"; rc=$?\nd=\nfor a; do [ "$p" = -C ] && d=$a; p=$a; done\n'
        "printf '\\377' | dd of=\"$d/big.bin\" bs=1 seek=4096 conv=notrunc 2>/dev/null\n"
        "exit $rc\n",
    )
    spec = copy_spec(path="~/src", to="~/dst")
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    end = events[-1]
    assert isinstance(end, TaskFinished) and end.rc == 1
    lines = lines_of(events)
    assert "differs: big.bin: sha256 differs" in lines
    assert any("verification failed: the copy on h1 differs from h0" in line for line in lines)
    assert list(fake_hosts[1].home.iterdir()) == [], "the bad copy was left behind"


async def test_a_missing_file_fails_on_the_file_count(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    make_tree(fake_hosts[0].home / "src")
    fake_hosts[1].write_tool(
        "tar",
        '#!/bin/sh\n/bin/tar "$@"; rc=$?\nfor a; do [ "$p" = -C ] && d=$a; p=$a; done\n'
        'rm -f "$d/a/b/c/deep.txt"\nexit $rc\n',
    )
    events = await collect(run_copy("h1", dest, prepare(copy_spec(path="~/src")), peer))  # type: ignore[arg-type]
    lines = lines_of(events)
    assert "differs: a/b/c/deep.txt: missing on the destination" in lines
    assert any("(4 files there, 3 here)" in line for line in lines)
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 1


async def test_a_destination_that_fails_mid_stream_reports_its_error(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    make_tree(fake_hosts[0].home / "src")
    fake_hosts[1].write_tool(
        "tar",
        "#!/bin/sh\nhead -c 100000 >/dev/null\n"
        'echo "tar: ./big.bin: Cannot write: No space left on device" >&2\nexit 2\n',
    )
    events = await collect(run_copy("h1", dest, prepare(copy_spec(path="~/src")), peer))  # type: ignore[arg-type]
    end = events[-1]
    assert isinstance(end, TaskFinished) and end.rc == 1, events[-3:]
    lines = lines_of(events)
    assert "h1: tar: ./big.bin: Cannot write: No space left on device" in lines
    assert "gpudash: tar on h1 (destination) exited 2" in lines
    deadline = time.monotonic() + 10
    while copy_leftovers(fake_hosts[:2]) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert copy_leftovers(fake_hosts[:2]) == []
    assert list(fake_hosts[1].home.iterdir()) == []


SLOW_TAR = """#!/bin/sh
# slow-receiver: the real tar, fed 16 KiB every 50 ms
python3 -c '
import sys, time
i, o = sys.stdin.buffer, sys.stdout.buffer
while b := i.read1(16384):
    o.write(b); o.flush(); time.sleep(0.05)
' slow-receiver | /bin/tar "$@"
"""


async def test_cancel_mid_copy_stops_both_ends_and_leaves_nothing(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    make_tree(fake_hosts[0].home / "src")
    fake_hosts[1].write_tool("tar", SLOW_TAR)
    cancel = asyncio.Event()
    events: list[TaskEvent] = []
    seen_running = False
    stream = run_copy("h1", dest, prepare(copy_spec(path="~/src")), peer, cancel=cancel)  # type: ignore[arg-type]
    async for event in stream:
        events.append(event)  # type: ignore[arg-type]
        if (
            isinstance(event, TaskOutput)
            and event.partial.startswith("copied ")
            and not cancel.is_set()
        ):
            seen_running = bool(copy_leftovers(fake_hosts[:2]))
            cancel.set()
    assert seen_running, "the copy was not running when cancelled"
    assert isinstance(events[-1], TaskCancelled)
    deadline = time.monotonic() + 10
    while copy_leftovers(fake_hosts[:2]) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert copy_leftovers(fake_hosts[:2]) == []
    assert list(fake_hosts[1].home.iterdir()) == [], "the partial copy was left behind"


async def test_a_dropped_connection_is_reported_lost_and_cleaned_up(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    """A copy flows through gpudash, so it cannot outlive the connection (unlike a detached
    job): it is reported lost, and once reconnected the partial copy is removed."""
    dest, peer = two_hosts
    make_tree(fake_hosts[0].home / "src")
    fake_hosts[1].write_tool("tar", SLOW_TAR)
    events: list[TaskEvent] = []
    killed = 0
    async for event in run_copy("h1", dest, prepare(copy_spec(path="~/src")), peer):  # type: ignore[arg-type]
        events.append(event)  # type: ignore[arg-type]
        if not killed and isinstance(event, TaskOutput) and event.partial.startswith("copied "):
            killed = sshd.kill_connections()
    assert killed >= 1
    end = events[-1]
    assert isinstance(end, TaskLost), lines_of(events)
    assert end.reason == "connection lost during the copy"
    deadline = time.monotonic() + 10
    while copy_leftovers(fake_hosts[:2]) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert copy_leftovers(fake_hosts[:2]) == []
    assert list(fake_hosts[1].home.iterdir()) == []


async def test_a_timeout_stops_the_copy_and_says_so(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    make_tree(fake_hosts[0].home / "src")
    fake_hosts[1].write_tool("tar", SLOW_TAR)
    spec = copy_spec(path="~/src", timeout="2s")
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    end = events[-1]
    assert isinstance(end, TaskFinished) and (end.rc, end.timed_out) == (124, True)
    assert "gpudash: the copy did not finish within 2s" in lines_of(events)
    deadline = time.monotonic() + 10
    while copy_leftovers(fake_hosts[:2]) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert copy_leftovers(fake_hosts[:2]) == []
    assert list(fake_hosts[1].home.iterdir()) == []


async def test_shell_syntax_in_paths_arrives_as_literal_text(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object], tmp_path: Path
):
    dest, peer = two_hosts
    pwned = Path(f"/tmp/gpudash-copy-pwned-{uuid.uuid4().hex}")
    nasty = f"it's'; rm -rf ~ # $(touch {pwned}) `touch {pwned}`"
    src = fake_hosts[0].home / nasty
    src.mkdir(parents=True)
    (src / "f.txt").write_text("literal\n")
    (fake_hosts[1].home / "keep").write_text("still here")
    spec = copy_spec(path=f"~/{nasty}", to=f"~/{nasty} copy")
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 0, lines_of(events)
    assert (fake_hosts[1].home / f"{nasty} copy" / "f.txt").read_text() == "literal\n"
    assert (fake_hosts[1].home / "keep").read_text() == "still here"
    assert not pwned.exists()


async def test_a_partial_copy_left_by_a_dead_gpudash_is_removed_by_the_next_run(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    (fake_hosts[0].home / "src").mkdir()
    (fake_hosts[0].home / "src" / "f").write_text("f\n")
    stale = fake_hosts[1].home / "dst.gpudash-copy-20260101T000000-abcdef"
    stale.mkdir()
    (stale / "half").write_text("half a file")
    spec = copy_spec(path="~/src", to="~/dst")
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 0, lines_of(events)
    assert sorted(p.name for p in fake_hosts[1].home.iterdir()) == ["dst"]


async def test_an_existing_destination_is_kept_unless_replace_is_set(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    (fake_hosts[0].home / "src").mkdir()
    (fake_hosts[0].home / "src" / "new.txt").write_text("new\n")
    (fake_hosts[1].home / "src").mkdir()
    (fake_hosts[1].home / "src" / "old.txt").write_text("old\n")
    events = await collect(run_copy("h1", dest, prepare(copy_spec(path="~/src")), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 3
    assert any("already exists on the destination host" in line for line in lines_of(events))
    assert (fake_hosts[1].home / "src" / "old.txt").exists()
    spec = copy_spec(path="~/src", replace=True)
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 0, lines_of(events)
    assert sorted(p.name for p in (fake_hosts[1].home / "src").iterdir()) == ["new.txt"]
    assert sorted(p.name for p in fake_hosts[1].home.iterdir()) == ["src"]


async def test_the_check_skips_the_copy_and_a_missing_source_is_a_clear_failure(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    (fake_hosts[1].home / "done").write_text("")
    spec = copy_spec(path="~/src", check='test -e "$HOME/done"')
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskSkipped)
    events = await collect(run_copy("h1", dest, prepare(copy_spec(path="~/nope")), peer))  # type: ignore[arg-type]
    end = events[-1]
    assert isinstance(end, TaskFinished) and end.rc == 3
    home = fake_hosts[0].home
    assert f"gpudash: no directory {home}/nope on the source host" in lines_of(events)
    assert [p.name for p in fake_hosts[1].home.iterdir()] == ["done"]


async def test_a_copy_within_one_host_works_and_onto_itself_is_skipped(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    _, peer = two_hosts
    source = peer("h0")  # type: ignore[operator]
    make_tree(fake_hosts[0].home / "src")
    spec = copy_spec(path="~/src", to="~/again")
    events = await collect(run_copy("h0", source, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 0, lines_of(events)
    assert tree_of(fake_hosts[0].home / "again") == tree_of(fake_hosts[0].home / "src")
    events = await collect(run_copy("h0", source, prepare(copy_spec(path="~/src")), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskSkipped)
    assert events[-1].reason == "this is the copy's source host"


async def test_an_unset_or_unknown_source_blocks_the_copy(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    builtin = load_tasks()["copy"]
    events = await collect(run_copy("h1", dest, prepare(builtin), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskBlocked)
    assert events[-1].reason == "set params.from (the source host) in [tasks.copy]"
    spec = load_tasks({"copy": {"params": {"from": "h7"}}})["copy"]
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskBlocked) and "'h7' is not configured" in events[-1].reason


def test_the_confirmation_shows_what_each_end_runs_with_values_quoted():
    shown = prepare(copy_spec(path="~/it's", to="/srv/x y")).shown
    source, dest = shown.split("# on the destination host", 1)
    assert source.startswith("# copy from h0: on the source host\n")
    assert "export GPUDASH_PATH='~/it'\"'\"'s'\n" in source and "exec tar -cf - ." in source
    assert "export GPUDASH_TO='/srv/x y'\n" in dest and 'tar -xpf - --no-same-owner -C "$T"' in dest


# --- config -------------------------------------------------------------------------------------

HOSTS = '[hosts.a]\naddress = "10.0.0.1"\n\n[hosts.b]\naddress = "10.0.0.2"\n\n'


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (
            'params = { from = "c", path = "~/venvs/serve" }',
            'c.toml:8: tasks.copy.params.from: unknown host "c" (hosts: a, b)',
        ),
        ('params = { from = "a", path = "" }', "c.toml:8: tasks.copy.params.path: expected a"),
        (
            'params = { from = "a", path = "venvs/x" }',
            "c.toml:8: tasks.copy.params.path: expected an absolute path or one starting with ~/",
        ),
        (
            'params = { from = "a", path = "~/x", to = "rel" }',
            "c.toml:8: tasks.copy.params.to: expected an absolute path",
        ),
        ('params = { from = "a", pth = "~/x" }', "c.toml:8: tasks.copy.params.pth: unknown"),
        ('params = { from = "a", to = "~" }', "c.toml:8: tasks.copy.params.to: expected a"),
        ('sudo = true\nparams = { from = "a" }', "c.toml:8: tasks.copy.sudo: a copy runs as"),
        ('params = { from = "a", to = "~/x/../.." }', "tasks.copy.params.to: expected a dir"),
    ],
)
def test_copy_params_are_checked_at_load_with_the_key_named(table: str, problem: str):
    with pytest.raises(ConfigError) as caught:
        parse_config(HOSTS + "[tasks.copy]\n" + table + "\n", "c.toml")
    assert problem in str(caught.value)


def test_a_copy_from_a_configured_host_loads():
    config = parse_config(HOSTS + '[tasks.copy]\nparams = { from = "a", path = "/srv/m/" }\n', "c")
    spec = config.tasks["copy"]
    assert (spec.params["from"], spec.params["path"], spec.params["to"]) == ("a", "/srv/m", None)


# --- gpudash run copy ---------------------------------------------------------------------------


COPY_TASKS = '[tasks.copy]\nparams = { from = "h0", path = "~/src", via = "gpudash" }\n'


def test_run_copy_streams_progress_and_the_verification(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from gpudash.cli.main import main

    make_tree(fake_hosts[0].home / "src")
    config = write_config(sshd, fake_hosts[:2], tmp_path / "c.toml", COPY_TASKS)
    assert main(["run", "copy", "h1", "--yes", "--config", config]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "h1 | copying 4 files (6.0 MiB as tar) from h0:~/src to h1:~/src" in out
    assert "h1 | verified: 4 files (6.0 MiB), 1 link, every sha256 matches" in out
    assert any(line.startswith("h1 | == copy: ok (") for line in out)
    assert tree_of(fake_hosts[1].home / "src") == tree_of(fake_hosts[0].home / "src")


def test_run_copy_waits_for_its_needs(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from gpudash.cli.main import main

    make_tree(fake_hosts[0].home / "src")
    tasks = (
        '[tasks.prep]\ntitle = "prepare"\nkind = "script"\nrun = "echo no disk; exit 4"\n\n'
        + COPY_TASKS
        + 'needs = ["prep"]\n'
    )
    config = write_config(sshd, fake_hosts[:2], tmp_path / "c.toml", tasks)
    assert main(["run", "copy", "h1", "--yes", "--config", config]) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("h1 | == prep: failed rc=4") for line in out)
    assert "h1 | == copy: not run: needs prep, which did not succeed" in out
    assert not (fake_hosts[1].home / "src").exists()


async def test_token_shaped_text_is_masked_in_the_output_and_the_local_log(
    sshd: Sshd, fake_hosts: list[FakeHost], two_hosts: tuple[Transport, object]
):
    dest, peer = two_hosts
    token = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    (fake_hosts[0].home / token).mkdir()
    (fake_hosts[0].home / token / "f").write_text("x")
    spec = copy_spec(path=f"~/{token}")
    events = await collect(run_copy("h1", dest, prepare(spec), peer))  # type: ignore[arg-type]
    assert isinstance(events[-1], TaskFinished) and events[-1].rc == 0, lines_of(events)
    assert "copying 1 file (10.0 KiB as tar) from h0:~/hf_******** to h1:~/hf_********" in (
        lines_of(events)
    )
    started = next(e for e in events if isinstance(e, TaskStarted))
    log = Path(started.log_path).read_text()
    assert token not in log and "hf_********" in log
    assert Path(started.log_path).parent.stat().st_mode & 0o777 == 0o700


def test_ctrl_c_in_gpudash_run_stops_both_ends(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path
):
    make_tree(fake_hosts[0].home / "src")
    fake_hosts[1].write_tool("tar", SLOW_TAR)
    config = write_config(sshd, fake_hosts[:2], tmp_path / "c.toml", COPY_TASKS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudash", "run", "copy", "h1", "--yes", "--config", config],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("h1 | copying "):
            break
    running = copy_leftovers(fake_hosts[:2])
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (lines, rest, err)
    assert "h1 | == copy: cancelled" in rest.splitlines()
    assert running, "the copy was not running when interrupted"
    deadline = time.monotonic() + 10
    while copy_leftovers(fake_hosts[:2]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert copy_leftovers(fake_hosts[:2]) == []
    assert list(fake_hosts[1].home.iterdir()) == []


# --- the archive size the source announces, past 2 GiB ------------------------------------


@pytest.mark.parametrize("awk", ["system", "busybox"])
def test_the_source_announces_archives_past_2_gib_at_their_size(tmp_path: Path, awk: str):
    """The progress line's total (`copied X / TOTAL`) comes from the source's estimate; mawk
    (Debian's awk) printed it clamped to 2 GiB and busybox awk negative, for any venv or model
    bigger than that."""
    path = "/usr/local/bin:/usr/bin:/bin"
    if awk == "busybox":
        busybox = require("busybox")
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "awk").symlink_to(busybox)
        path = f"{tmp_path / 'bin'}:{path}"
    tree = tmp_path / "tree"
    tree.mkdir()
    with open(tree / "weights.bin", "wb") as f:
        f.truncate(3 << 30)  # sparse: 3 GiB to find and tar, no room on disk
    (tree / "config.json").write_text("{}\n")
    script = copy_scripts.script(
        copy_scripts.SOURCE, {"GPUDASH_PATH": str(tree), "GPUDASH_MARK": "MARK"}
    )
    proc = subprocess.Popen(
        ["/bin/sh", "-s"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={"PATH": path, "HOME": str(tmp_path)},
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(script.encode())
        proc.stdin.close()
        header = proc.stdout.readline().decode().split()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    files, size = int(header[header.index("files") + 1]), int(header[header.index("files") + 2])
    entries = 512 + (3 << 30) + 512 + 512  # two headers, the data padded to 512
    assert files == 2
    assert size == (entries + 1536 + 10239) // 10240 * 10240
