"""What keeps a one-host `gpudash probe` close to OpenSSH's one-liner (issue 33, item 10;
bench/bench_probe_split.py measures it): the JSON document leaves in one write, the saved-
results module loads only for --save/--replay, and asyncssh loads without X.509."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from gpudash.cli.hosts import replay_config
from gpudash.cli.probe import probe_command
from gpudash.saved import save_host
from tests.support.hosts import host


class Writes:
    """A stdout that counts its write calls (each is a system call when unbuffered)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_probe_json_leaves_in_one_write_even_where_stdout_is_unbuffered(tmp_path: Path):
    save_host(tmp_path / "saved", host(name="h0"))
    out = Writes()
    config = replay_config(tmp_path / "saved")
    code = asyncio.run(probe_command(config, None, as_json=True, save=None, out=out))  # type: ignore[arg-type]
    assert int(code) == 0
    assert len(out.calls) == 1  # json.dump wrote ~2,000 pieces: one system call each
    assert json.loads(out.calls[0])["hosts"][0]["state"] == "ready"


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_probe_command_does_not_load_the_saved_results_module():
    code = "import sys, gpudash.cli.probe; print('gpudash.saved' in sys.modules)"
    assert _fresh(code) == "False"


def test_asyncssh_loads_without_x509_and_x509_still_imports_afterwards():
    code = (
        "import sys, gpudash.transport, asyncssh\n"
        "loaded = 'cryptography.x509' in sys.modules\n"
        "from asyncssh import known_hosts, public_key\n"
        "x509_algs = [a for a in public_key.get_public_key_algs() if a.startswith(b'x509v3-')]\n"
        "import cryptography.x509\n"
        "print(loaded, public_key._x509_available, known_hosts._x509_available,\n"
        "      len(x509_algs), cryptography.x509.Name.__name__)\n"
    )
    # Not loaded for asyncssh (it was, and then went unused without pyOpenSSL); X.509 off
    # as it was; importable as usual afterwards.
    assert _fresh(code).split() == ["False", "False", "False", "0", "Name"]


def test_where_pyopenssl_is_installed_asyncssh_imports_x509_as_before(tmp_path: Path):
    # A stand-in pyOpenSSL that fails as a broken install would: only whether gpudash hid
    # cryptography.x509 from asyncssh is looked at, and with pyOpenSSL there it must not.
    (tmp_path / "OpenSSL").mkdir()
    (tmp_path / "OpenSSL" / "__init__.py").write_text("raise ImportError('stand-in')\n")
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import gpudash.transport, asyncssh\n"
        "print('cryptography.x509' in sys.modules)\n"
    )
    assert _fresh(code) == "True"


# Not gpudash.probe.kernel_log: the health section's body prints its Xid sets.
PARSER_MODULES = (
    "gpudash.probe.arch",
    "gpudash.probe.gpu_ids",
    "gpudash.probe.query",
    "gpudash.probe.smi",
    "gpudash.probe.smiq",
    "gpudash.probe.hostfacts",
    "gpudash.probe.nvlink",
    "gpudash.probe.topo",
    "gpudash.probe.nvcc",
)


def test_the_probe_script_is_built_before_any_parser_loads_and_warming_loads_them_all():
    code = (
        "import sys\n"
        "from gpudash.probe.registry import all_sections\n"
        "from gpudash.probe.script import build_script, make_plan\n"
        "script = build_script(make_plan(all_sections(), {}, 30))\n"
        f"before = [m for m in {PARSER_MODULES!r} if m in sys.modules]\n"
        "from gpudash.host_probe import warm_parsers\n"
        "warm_parsers(all_sections())\n"
        f"after = [m for m in {PARSER_MODULES!r} if m in sys.modules]\n"
        "print(len(script) > 1000, len(before), len(after))\n"
    )
    assert _fresh(code).split() == ["True", "0", str(len(PARSER_MODULES))]


def test_the_bench_splits_a_trace_into_its_phases():
    from bench.bench_probe_split import split

    trace = "\n".join(
        [
            '7 100.000 execve("/venv/bin/python", ["python", "-m", "gpudash"], 0x1) = 0',
            '7 100.040 openat(AT_FDCWD, "/src/gpudash/__init__.py", O_RDONLY|O_CLOEXEC) = 3',
            "7 100.100 connect(6, {sa_family=AF_INET, sin_port=htons(22)}, 16) = -1 EINPROGRESS",
            '7 100.300 sendto(6, "SSH-2.0-AsyncSSH_2.24.1\\r\\n", 25, 0, NULL, 0) = 25',
            '7 100.301 recvfrom(6, "SSH-2.0-OpenSSH_9.2p1"..., 262144, 0, NULL, NULL) = 41',
            '7 100.350 sendto(6, "\\0\\0\\200"..., 32804, 0, NULL, 0) = 32804',
            '8 100.500 recvfrom(6, "\\0\\0"..., 262144, 0, NULL, NULL) = 2504',
            '8 100.600 recvfrom(6, "\\0\\0"..., 262144, 0, NULL, NULL) = 84',
            '7 100.610 write(1, "{\\n  \\"schema\\""..., 9000) = 9000',
            '7 100.611 write(2, "warning", 7) = 7',
            "7 100.615 exit_group(0)                   = ?",
        ]
    )
    ms = {phase: round(took * 1000) for phase, took in split(trace).items()}
    assert ms == {
        "start": 40,
        "cli+config": 60,
        "asyncssh": 200,
        "handshake": 50,
        "host": 250,
        "parse": 10,
        "output": 0,
        "exit": 5,
    }
