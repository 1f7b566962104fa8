"""`gpudash probe` end to end: the installed CLI, a real sshd, fake GPU hosts, real JSON.

Config, SSH, the one probe script, parsing and output all run for real; the only stand-ins are
the fake `nvidia-smi`/`nvcc` scripts printing captured outputs (tests/support/fakegpu.py).
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import asyncssh
import pytest

from gpudash.probe.registry import SECTION_NAMES
from tests.support import FIXTURES, fakegpu
from tests.support.cli import gpudash
from tests.support.sshd import FakeHost, Sshd

FIX = FIXTURES
PUBLIC = FIX / "public"
NVLINK_8X = {
    "topo_m.txt": PUBLIC / "topo-h200-8x-nv18-12nic-tabs.txt",
    "query_csv.txt": PUBLIC / "query-h200-8x-pcie-csv.txt",
}


def host_block(sshd: Sshd, name: str, port: int, **extra: object) -> str:
    keys = {"port": port, "network_targets": ["http://127.0.0.1:9/"], "connect_timeout": 2}
    return sshd.host_toml(sshd.hosts[0], name, **{**keys, **extra})


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_one_good_host_finishes_while_each_bad_host_gets_its_one_line_reason(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, silent_port: int
):
    good, garbled = fake_hosts[0], fake_hosts[1]
    fakegpu.install(good.bin_dir, FIX / "h200-1x")
    garbled.write_tool("nvidia-smi", "#!/bin/sh\nprintf 'NVIDIA \\377\\376 H200\\n'\n")
    wrong_keys = tmp_path / "wrong_known_hosts"
    other_key = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    wrong_keys.write_text(f"[127.0.0.1]:{fake_hosts[2].port} {other_key}")
    config = tmp_path / "config.toml"
    config.write_text(
        host_block(sshd, "good", good.port)
        + host_block(sshd, "garbled", garbled.port)
        + host_block(sshd, "refused", closed_port())
        + host_block(sshd, "changed", fake_hosts[2].port, known_hosts=str(wrong_keys))
        + host_block(sshd, "silent", silent_port, connect_timeout=1)
    )
    run = gpudash("probe", "--json", "--config", str(config))
    assert run.returncode == 1, run.stderr
    hosts = {h["name"]: h for h in json.loads(run.stdout)["hosts"]}
    assert [h for h in hosts] == ["good", "garbled", "refused", "changed", "silent"]

    ok = hosts["good"]
    assert ok["state"] == "ready" and ok["error"] is None
    assert set(ok["sections"]) == set(SECTION_NAMES)  # every registered section arrived
    gpu = ok["sections"]["gpus"]["data"]["gpus"][0]
    assert (gpu["name"], gpu["cc"], gpu["sm"], gpu["arch"]) == (
        "NVIDIA H200",
        "9.0",
        "sm_90",
        "Hopper",
    )
    assert ok["sections"]["gpus"]["data"]["cuda_version"] == "13.0"
    assert ok["sections"]["topology"]["data"]["summary"] == "single GPU: no GPU pairs"

    assert hosts["garbled"]["state"] == "ready"
    assert "\ufffd" in json.dumps(hosts["garbled"]["sections"]["gpus"], ensure_ascii=False)

    assert hosts["refused"]["state"] == "failed"
    assert "refused" in hosts["refused"]["error"]
    assert "CHANGED" in hosts["changed"]["error"]
    assert sshd.host_key_fingerprint in hosts["changed"]["error"]
    assert "timed out" in hosts["silent"]["error"]
    for name in ("refused", "changed", "silent"):
        assert "\n" not in hosts[name]["error"]


def test_an_8_gpu_nvlink_host_reports_every_pair_on_nv18(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
):
    fakegpu.install(fake_host.bin_dir, NVLINK_8X)
    config = tmp_path / "config.toml"
    config.write_text(host_block(sshd, "hgx", fake_host.port))
    run = gpudash("probe", "--json", "--config", str(config))
    assert run.returncode == 0, run.stderr
    (host,) = json.loads(run.stdout)["hosts"]
    topo = host["sections"]["topology"]["data"]
    assert topo["summary"] == "all 28 pairs NV18"
    assert topo["matrix"]["cpu_affinity"]["GPU0"] == "0-55,112-167"
    assert len(host["sections"]["gpus"]["data"]["gpus"]) == 8


def test_a_saved_probe_replays_to_the_same_results_without_connecting(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
):
    fakegpu.install(fake_host.bin_dir, FIX / "h200-1x")
    config = tmp_path / "config.toml"
    config.write_text(host_block(sshd, "box", fake_host.port))
    saved = tmp_path / "saved"
    live = gpudash("probe", "--json", "--save", str(saved), "--config", str(config))
    assert live.returncode == 0, live.stderr
    assert (saved / "box" / "gpus.smi.txt").read_text() == (
        FIX / "h200-1x/smi.txt"
    ).read_text().rstrip("\n")
    assert oct((saved / "box").stat().st_mode & 0o777) == "0o700"
    sshd.stop()
    try:
        again = gpudash("probe", "--json", "--replay", str(saved))
    finally:
        sshd.start()
    assert again.returncode == 0, again.stderr

    def data(doc: str) -> dict:
        (host,) = json.loads(doc)["hosts"]
        return {k: v["data"] for k, v in host["sections"].items()}

    assert data(again.stdout) == data(live.stdout)


def test_the_readable_output_has_a_line_per_section_and_a_total(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
):
    fakegpu.install(fake_host.bin_dir, FIX / "h200-1x")
    config = tmp_path / "config.toml"
    config.write_text(host_block(sshd, "box", fake_host.port))
    run = gpudash("probe", "--config", str(config))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    gpu_line = next(line for line in lines if "│ gpus" in line)
    assert "1× NVIDIA H200" in gpu_line and "sm_90" in gpu_line and "CUDA 13.0" in gpu_line
    assert sum("│" in line for line in lines) == len(SECTION_NAMES)  # a line per section
    assert lines[-1] == "1 of 1 hosts answered"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["probe", "nosuch"], "unknown host 'nosuch'"),
        (["--config", "/nonexistent/gpudash.toml", "probe"], "/nonexistent/gpudash.toml"),
        (["probe", "--replay", "/nonexistent/dir"], "/nonexistent/dir: no such directory"),
        (["parse", "bogus"], "invalid choice"),
    ],
)
def test_usage_and_config_errors_are_one_line_with_exit_code_2(args, needle):
    run = gpudash(*args)
    assert run.returncode == 2
    assert needle in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_a_bad_config_line_is_named_with_file_and_line(tmp_path: Path):
    config = tmp_path / "bad.toml"
    config.write_text('[hosts.a]\naddress = "x"\nprot = 22\n')
    run = gpudash("--config", str(config), "probe")
    assert run.returncode == 2
    assert run.stderr.strip() == f"{config}:3: hosts.a.prot: unknown key (did you mean 'port'?)"


async def test_leaving_a_probe_midway_leaves_no_probe_process_on_the_host(
    sshd: Sshd, fake_host: FakeHost
):
    import asyncio

    from gpudash.host_probe import plan_for
    from gpudash.transport.ssh import SshTransport

    fake_host.write_tool("nvidia-smi", "#!/bin/sh\nexec sleep 987\n")
    host = sshd.host_config(fake_host, network_targets=("http://127.0.0.1:9/",))
    plan = plan_for(host)

    def leftovers() -> list[str]:
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        return [
            line
            for line in ps.splitlines()
            if "sleep 987" in line
            or plan.nonce in line
            or ("gpudash." in line and "timeout" in line)
        ]

    async with SshTransport(host) as transport:
        stream = transport.probe(plan, timeout=60)
        first = await anext(stream)  # a fast section arrives; the GPU ones hang
        assert first.name not in ("gpus", "topology")
        assert leftovers()  # the hung sections are running on the host
        await stream.aclose()
    for _ in range(50):
        if not leftovers():
            break
        await asyncio.sleep(0.1)
    assert leftovers() == []


def test_an_unwritable_save_dir_is_a_one_line_usage_error_before_any_probe(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    run = gpudash("probe", "--json", "--save", str(blocker / "sub"))
    assert run.returncode == 2
    assert run.stderr.strip().startswith(f"gpudash: --save {blocker / 'sub'}:")
    assert run.stdout == ""
