"""The direct copy's receiving end attacked as a hostile source host would: with the one-use
key, through the real destination job (launched by gpudash's job machinery), its real
`authorized_keys` line (restrict, from=, the forced command) under a real sshd, and OpenSSH's
client sending each verb, as the source job does.

Whatever the source sends (symlinks and hard links in a tar stream, `..` in link targets,
byte ranges and directories through planted links, links planted between two verbs or left by
an earlier run), nothing outside the partial copy may be written, created or removed.
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import tarfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gpudash.tasks import jobs
from gpudash.tasks.copy.direct import DirectCopy, key_pair
from gpudash.tasks.copy.params import CopyParams
from gpudash.tasks.prepare import Prepared
from gpudash.tasks.spec import load_tasks
from gpudash.transport.ssh import SshPool
from tests.support.sshd import FakeHost, Sshd

TASK = "copy"


@pytest.fixture(scope="module")
def dest_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A test sshd whose host h0 also reads `HOME/.ssh/authorized_keys`, as a real host does
    (the shared test sshd reads only its own key file)."""
    root = tmp_path_factory.mktemp("recv-sshd")
    home = root / "hosts" / "h0" / "home"
    keys = f"AuthorizedKeysFile {root}/authorized_keys {home}/.ssh/authorized_keys"
    server = Sshd(root, host_options={0: (keys,)})
    server.start()
    try:
        yield server
    finally:
        server.close()


@dataclass
class Dest:
    """The destination of one copy run, the one-use key in hand (the attacker's view)."""

    sshd: Sshd
    host: FakeHost
    key: Path
    known: Path
    run: str
    outside: Path
    holds: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def partial(self) -> Path:
        return self.host.home / "dst.gpudash-partial"

    def argv(self, *verb: str) -> list[str]:
        return [
            "ssh", "-i", str(self.key), "-F", "/dev/null", "-o", "IdentitiesOnly=yes",
            "-o", "IdentityAgent=none", "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={self.known}", "-o", "LogLevel=ERROR",
            "-p", str(self.host.port), f"{self.sshd.user}@127.0.0.1", *verb,
        ]  # fmt: skip

    def send(
        self, verb: str, data: bytes = b"", timeout: float = 30
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.argv(*verb.split()), input=data, capture_output=True, timeout=timeout
        )

    def open(self, verb: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.argv(*verb.split()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def hold(self) -> None:
        """The source's hold session, beating like the source job's (a byte every 2 s)."""
        proc = self.open("hold")
        self.holds.append(proc)

        def beat() -> None:
            assert proc.stdin is not None
            try:
                while proc.poll() is None:
                    proc.stdin.write(b".")
                    proc.stdin.flush()
                    time.sleep(2)
            except (BrokenPipeError, ValueError):
                pass

        threading.Thread(target=beat, daemon=True).start()


def spec_prepared() -> tuple[Prepared, CopyParams]:
    table = {"kind": "copy", "params": {"from": "h1", "path": "~/src", "to": "~/dst"}}
    spec = load_tasks({TASK: table})[TASK]
    return Prepared(spec=spec, script="", check=None), CopyParams.of(spec.params)


async def launch_dest(sshd: Sshd, host: FakeHost, pool: SshPool, tmp: Path) -> Dest:
    """The real destination job with its key line in place, as `DirectCopy.events` starts it."""
    transport = pool.transport(sshd.host_config(host))
    prepared, params = spec_prepared()
    copy = DirectCopy(host.name, transport, transport, prepared, params, asyncio.Event())
    run = jobs.new_run_id()
    private, public = key_pair()
    script, recv = copy.dest_scripts(run, public, "127.0.0.1")
    launch = jobs.Launch(TASK, script, run, files={"recv.sh": recv}, timeout=600)
    launched = await jobs.launch(transport, launch)
    assert not launched.busy
    user, said = await copy.wait_ready()
    assert user is not None, said
    key = tmp / f"id-{run}"
    key.write_text(private)
    key.chmod(0o600)
    known = tmp / "known_hosts"
    known.write_text(f"[127.0.0.1]:{host.port} {sshd.host_public_key}\n")
    outside = tmp / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "victim").write_text("precious\n")
    dest = Dest(sshd, host, key, known, run, outside)
    dest.hold()
    return dest


@pytest.fixture
async def dest(dest_sshd: Sshd, tmp_path: Path) -> AsyncIterator[Dest]:
    host = dest_sshd.hosts[0]
    host.reset()
    pool = SshPool([])
    try:
        d = await launch_dest(dest_sshd, host, pool, tmp_path)
        yield d
        for proc in d.holds:
            proc.kill()
            proc.wait()
        transport = pool.transport(dest_sshd.host_config(host))
        await jobs.cancel(transport, TASK)
    finally:
        await pool.close()


def tar_of(*members: tuple[str, str, str | bytes]) -> bytes:
    """A tar stream of (name, type, target or content): type f, d, l (symlink), h (hard link)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, kind, value in members:
            info = tarfile.TarInfo(name)
            info.mtime = int(time.time())
            if kind == "f":
                data = value.encode() if isinstance(value, str) else value
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"d": tarfile.DIRTYPE, "l": tarfile.SYMTYPE, "h": tarfile.LNKTYPE}[kind]
            info.mode = 0o755 if kind == "d" else 0o777
            info.linkname = str(value)
            tar.addfile(info)
    return out.getvalue()


def ranges(*parts: tuple[str, bytes]) -> bytes:
    """`parts` input: a header `OFF_MIB TAB LEN TAB MODE TAB PATH` then LEN bytes, each."""
    return b"".join(f"0\t{len(data)}\t644\t{path}\n".encode() + data for path, data in parts)


def untouched(dest: Dest) -> None:
    """Outside the partial copy: the victim as it was, nothing new beside it."""
    assert (dest.outside / "victim").read_text() == "precious\n"
    assert sorted(p.name for p in dest.outside.iterdir()) == ["victim"]


def links_in(root: Path) -> list[str]:
    """Symlinks, and files with more than one name, under root."""
    if not root.exists():
        return []
    found = []
    for path in root.rglob("*"):
        if path.is_symlink() or (path.is_file() and path.stat().st_nlink > 1):
            found.append(str(path.relative_to(root)))
    return sorted(found)


def plant(dest: Dest) -> None:
    """Links to outside in the partial copy, as an earlier verb or run could have left them:
    a directory link, a file link, a relative link climbing out, a hard link."""
    dest.partial.mkdir(exist_ok=True)
    (dest.partial / "x").symlink_to(dest.outside)
    (dest.partial / "y").symlink_to(dest.outside / "victim")
    up = os.path.relpath(dest.outside, dest.partial)
    (dest.partial / "up").symlink_to(up)
    os.link(dest.outside / "victim", dest.partial / "z")


# -- recv: the tar streams ----------------------------------------------------------------


def test_symlinks_in_a_tar_stream_are_refused_and_never_followed(dest: Dest):
    up = os.path.relpath(dest.outside, dest.partial)
    first = dest.send(
        "recv",
        tar_of(("ok.txt", "f", "fine\n"), ("x", "l", str(dest.outside)), ("up", "l", up)),
    )
    second = dest.send(
        "recv", tar_of(("x/planted", "f", "pwned\n"), ("up/escaped", "f", "pwned\n"))
    )
    untouched(dest)
    assert links_in(dest.partial) == []
    assert not (dest.host.home / "escaped").exists()
    assert first.returncode != 0, first
    # what did land, landed inside (the refused links' names are plain directories now)
    assert (dest.partial / "ok.txt").read_text() == "fine\n"
    if second.returncode == 0:
        assert (dest.partial / "x" / "planted").read_text() == "pwned\n"


def test_a_hard_link_in_a_tar_stream_cannot_reach_a_file_outside(dest: Dest):
    dest.partial.mkdir()
    (dest.partial / "x").symlink_to(dest.outside)  # planted between two verbs
    done = dest.send(
        "recv", tar_of(("h", "h", "x/victim"), ("g", "h", str(dest.outside / "victim")))
    )
    dest.send("parts", ranges(("h", b"pwned\n"), ("g", b"pwned\n")))
    untouched(dest)
    assert done.returncode != 0
    assert [p for p in links_in(dest.partial) if p != "x"] == []


def test_a_hard_link_to_a_file_of_the_copy_is_refused_too(dest: Dest):
    done = dest.send("recv", tar_of(("a", "f", "one\n"), ("b", "h", "a")))
    assert done.returncode != 0
    assert links_in(dest.partial) == []


def test_no_setuid_program_comes_out_of_a_stream_or_a_range(dest: Dest):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("su")
        info.mode, info.size = 0o4755, 3
        tar.addfile(info, io.BytesIO(b"#!\n"))
    dest.send("recv", out.getvalue())
    ranged = b"0\t3\t4755\tsu2\n#!\n"
    said = dest.send("parts", ranged)
    assert (dest.partial / "su").stat().st_mode & 0o7777 == 0o755
    assert not (dest.partial / "su2").exists() or not (dest.partial / "su2").stat().st_mode & 0o6000
    assert said.returncode != 0


def test_a_tree_session_makes_its_directories_then_lands_its_stream(dest: Dest):
    stream = b"d\nd/e\nempty\n\n" + tar_of(("./d/e/f.txt", "f", "hello\n"), ("./top", "f", "x"))
    done = dest.send("tree", stream)
    assert done.returncode == 0, done.stderr
    assert (dest.partial / "d" / "e" / "f.txt").read_text() == "hello\n"
    assert (dest.partial / "top").read_text() == "x"
    assert (dest.partial / "empty").is_dir()


def test_a_tree_session_makes_no_directory_through_a_link(dest: Dest):
    plant(dest)
    done = dest.send("tree", b"x/made\nup/made\n\n" + tar_of(("./x/f", "f", "pwned\n")))
    untouched(dest)
    assert not (dest.host.home / "made").exists()
    assert done.returncode != 0


# -- parts, mkdirs, prune: paths through planted links ------------------------------------


def test_byte_ranges_never_land_through_a_link_and_still_land_inside(dest: Dest):
    plant(dest)
    said = [dest.send("parts", ranges((p, b"pwned\n"))) for p in ("x/new", "y", "z", "up/new")]
    untouched(dest)
    assert all(done.returncode != 0 for done in said), said
    done = dest.send("parts", ranges(("d/e/big", b"0123456789"), ("top", b"abc")))
    assert done.returncode == 0, done.stderr
    assert (dest.partial / "d" / "e" / "big").read_bytes() == b"0123456789"
    assert (dest.partial / "top").read_bytes() == b"abc"


def test_directories_are_never_made_through_a_link(dest: Dest):
    plant(dest)
    done = dest.send("mkdirs", b"x/made\nup/made\nfine/sub\n")
    untouched(dest)
    assert not (dest.host.home / "made").exists()
    assert done.returncode != 0


def test_prune_never_removes_through_a_link(dest: Dest):
    plant(dest)
    dest.send("prune", b"x/victim\nup/victim\n")
    untouched(dest)
    dest.send("prune", b"x\ny\nz\nup\n")  # the links themselves: gone, their targets kept
    untouched(dest)
    assert sorted(os.listdir(dest.partial)) == []


# -- seal: links and directory modes come last, and end the data verbs ---------------------


def seal_lines(*lines: tuple[str, ...]) -> bytes:
    return b"".join(("\t".join(line) + "\n").encode() for line in lines)


def test_seal_makes_the_copys_links_and_modes_and_ends_every_data_verb(dest: Dest):
    assert dest.send("mkdirs", b"blobs\nsnap/c\n").returncode == 0
    assert dest.send("recv", tar_of(("blobs/b1", "f", "data\n"))).returncode == 0
    done = dest.send(
        "seal",
        seal_lines(
            ("l", "-", "snap/c/model", "../../blobs/b1"),
            ("l", "-", "abs", "/etc/hostname"),
            ("d", "700", "snap/c"),
        ),
    )
    assert done.returncode == 0, done.stderr
    assert os.readlink(dest.partial / "snap" / "c" / "model") == "../../blobs/b1"
    assert os.readlink(dest.partial / "abs") == "/etc/hostname"
    assert (dest.partial / "snap" / "c").stat().st_mode & 0o777 == 0o700
    # once sealed, no data verb runs: the links it made can never be written through
    for verb, data in (
        ("recv", tar_of(("snap/c/model", "f", "pwned\n"))),
        ("parts", ranges(("abs", b"pwned\n"))),
        ("mkdirs", b"new\n"),
        ("prune", b"blobs\n"),
    ):
        done = dest.send(verb, data)
        assert done.returncode != 0, verb
    assert (dest.partial / "blobs" / "b1").read_text() == "data\n"
    assert not (dest.partial / "new").exists()


def test_seal_never_makes_a_link_or_a_mode_through_a_link(dest: Dest):
    plant(dest)
    mode = dest.outside.stat().st_mode
    done = dest.send(
        "seal",
        seal_lines(("l", "-", "ok", "x"), ("l", "-", "x/evil", "/tmp"), ("d", "777", "x")),
    )
    assert os.readlink(dest.partial / "ok") == "x"  # made, until the first refused line
    assert done.returncode != 0
    assert dest.send("seal", seal_lines(("d", "777", "up"))).returncode != 0
    untouched(dest)
    assert dest.outside.stat().st_mode == mode
    assert not (dest.outside / "evil").is_symlink()


def test_a_link_made_while_a_stream_is_open_waits_for_it_and_then_no_stream_runs(dest: Dest):
    """The race: the seal verb (the only one that makes links) against an open stream."""
    stream = dest.open("recv")
    assert stream.stdin is not None
    stream.stdin.write(tar_of(("first.txt", "f", "1\n"))[:1024])  # mid-stream
    stream.stdin.flush()
    time.sleep(1)
    seal = dest.open("seal")
    assert seal.stdin is not None
    seal.stdin.write(seal_lines(("l", "-", "x", str(dest.outside))))
    seal.stdin.close()
    time.sleep(2)
    assert seal.poll() is None  # waiting for the open stream
    assert not (dest.partial / "x").is_symlink()
    stream.stdin.close()
    stream.wait(30)
    assert seal.wait(30) == 0
    assert (dest.partial / "x").is_symlink()
    after = dest.send("recv", tar_of(("x/planted", "f", "pwned\n")))
    assert after.returncode != 0
    untouched(dest)


# -- what an earlier run left ---------------------------------------------------------------


async def test_links_left_in_a_partial_copy_are_gone_before_the_key_is(
    dest_sshd: Sshd, tmp_path: Path
):
    host = dest_sshd.hosts[0]
    host.reset()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("precious\n")
    partial = host.home / "dst.gpudash-partial"
    (partial / "keep").mkdir(parents=True)
    (partial / "keep" / "f").write_text("kept\n")
    (partial / "x").symlink_to(outside)
    os.link(outside / "victim", partial / "z")
    os.mkfifo(partial / "fifo")
    pool = SshPool([])
    try:
        dest = await launch_dest(dest_sshd, host, pool, tmp_path)
        assert links_in(partial) == [] and not (partial / "fifo").exists()
        assert (partial / "keep" / "f").read_text() == "kept\n"
        dest.send("recv", tar_of(("x/planted", "f", "pwned\n")))
        dest.send("parts", ranges(("z", b"pwned\n")))
        untouched(dest)
        for proc in dest.holds:
            proc.kill()
        await jobs.cancel(pool.transport(dest_sshd.host_config(host)), TASK)
    finally:
        await pool.close()


async def test_an_earlier_runs_key_and_open_sessions_end_when_the_next_run_starts(
    dest_sshd: Sshd, tmp_path: Path
):
    """A run whose destination job died (SIGKILL) left its key line and a stream still open;
    the next run's key must be the only one that works, and the old stream must not write."""
    host = dest_sshd.hosts[0]
    host.reset()
    pool = SshPool([])
    try:
        first = await launch_dest(dest_sshd, host, pool, tmp_path)
        stream = first.open("recv")
        assert stream.stdin is not None
        late = tar_of(("early.txt", "f", "1\n"))
        stream.stdin.write(late[:1024])
        stream.stdin.flush()
        deadline = time.monotonic() + 15
        while not first.partial.exists():  # the session runs (its `data` made the partial)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        job = host.home / ".cache" / "gpudash" / "jobs" / TASK
        os.killpg(int((job / "pgid").read_text()), 9)
        for proc in first.holds:
            proc.kill()
        second = await launch_dest(dest_sshd, host, pool, tmp_path)
        keys = (host.home / ".ssh" / "authorized_keys").read_text()
        assert f"gpudash-copy-{first.run}-" not in keys  # swept as the next run started
        assert f"gpudash-copy-{second.run}-" in keys
        try:
            stream.stdin.write(late[1024:])
            stream.stdin.close()
        except BrokenPipeError:
            pass
        assert stream.wait(15) != 0, stream.stderr.read()  # ended by the new run
        assert not (first.partial / "early.txt").exists()  # and never wrote into its copy
        assert first.send("ping").returncode != 0
        assert second.send("ping").returncode == 0
        for proc in second.holds:
            proc.kill()
        await jobs.cancel(pool.transport(dest_sshd.host_config(host)), TASK)
    finally:
        await pool.close()
