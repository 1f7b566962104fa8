"""The CLI's text as a user reads it, through the real `gpudash` command against the test
sshd (issue 33, items 4, 6 and 7)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from gpudash.probe.registry import SECTION_NAMES
from tests.ssh.test_task_refusals import closed_port
from tests.support import FIXTURES, fakegpu
from tests.support.sshd import FakeHost, Sshd


def gpudash(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudash", *argv],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_probe_says_how_to_run_verify_from_the_cli(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    config = tmp_path / "gpudash.toml"
    config.write_text(sshd.host_toml(fake_host))
    done = gpudash("probe", "h0", "--config", str(config))
    [line] = [x for x in done.stdout.splitlines() if x.startswith("h0 │ verify ")]
    said = "not run (`gpudash run verify HOST` runs it; b then V in the dashboard)"
    assert line.endswith(said), line
    assert "(V runs it)" not in done.stdout


def test_check_tells_a_finding_shared_by_hosts_once_and_lists_its_hosts(tmp_path: Path) -> None:
    saved = tmp_path / "saved"
    for name in ("h0", "h1", "h2"):  # three identical hosts (one real capture, three names)
        shutil.copytree(FIXTURES / "saved" / "h200-1x", saved / name)
        meta = saved / name / "meta.json"
        meta.write_text(meta.read_text().replace('"host": "h200-1x"', f'"host": "{name}"'))
    done = gpudash("check", "--replay", str(saved))
    lines = done.stdout.splitlines()
    order = [line.split(":")[0] for line in lines if line[:1] == "h" and ": FAIL" in line]
    assert sorted(order) == ["h0", "h1", "h2"], lines  # blocks stream as each host is done
    first = order[0]
    assert done.stdout.count("why: uv creates venvs") == 1, done.stdout
    assert lines.count(f"  WARN  env.no_uv: no uv on the host  (as on {first})") == 2
    assert f"  WARN  env.no_uv: no uv on the host: 3 hosts: {' '.join(order)}" in lines
    assert lines.index("on several hosts:") > max(
        i for i, line in enumerate(lines) if f"(as on {first})" in line
    )


def test_probe_blocks_keep_one_section_order_and_the_totals_name_each_failed_host_once(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path
) -> None:
    h0, h1 = fake_hosts[:2]
    for host in (h0, h1):
        fakegpu.install(host.bin_dir, FIXTURES / "h200-1x")
    real = h1.bin_dir / "nvidia-smi"  # h1's GPU sections finish last: arrival order differs
    real.rename(h1.bin_dir / "nvidia-smi.real")
    real.write_text(f'#!/bin/sh\nsleep 1\nexec {h1.bin_dir}/nvidia-smi.real "$@"\n')
    real.chmod(0o755)
    config = tmp_path / "gpudash.toml"
    down = sshd.host_toml(h0, "down").replace(f"port = {h0.port}", f"port = {closed_port()}")
    config.write_text(sshd.host_toml(h0) + sshd.host_toml(h1) + down)
    done = gpudash("probe", "--config", str(config))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    order = {
        host: [x.split()[2] for x in lines if x.startswith(f"{host} ") and "FAILED" not in x]
        for host in ("h0", "h1")
    }
    assert order["h0"] == order["h1"] == [n for n in SECTION_NAMES if n in order["h0"]], order
    assert len(order["h0"]) >= 7, order
    [failed] = [x for x in lines if x.startswith("down ")]
    assert failed.startswith("down │ FAILED   connection refused by 127.0.0.1:"), failed
    assert lines[-1] == "2 of 3 hosts answered; no answer from down"


def test_tasks_on_a_host_that_does_not_answer_is_one_line(
    sshd: Sshd, fake_host: FakeHost, tmp_path: Path
) -> None:
    config = tmp_path / "gpudash.toml"
    table = sshd.host_toml(fake_host, "down")
    config.write_text(table.replace(f"port = {fake_host.port}", f"port = {closed_port()}"))
    done = gpudash("tasks", "down", "--config", str(config))
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    assert line.startswith("down: cannot connect: connection refused by 127.0.0.1:"), line


def test_an_ad_hoc_target_with_a_new_host_key_is_accepted_on_the_cli_with_its_fingerprint(
    sshd: Sshd, fake_host: FakeHost, isolated_home: Path, tmp_path: Path
) -> None:
    """`user@host` has no config to set host_key_policy in: the refusal names the flag, and
    the flag records the key (a changed key would still be refused) and prints it."""
    ssh = isolated_home / ".ssh"
    ssh.mkdir(mode=0o700)
    shutil.copy(sshd.client_key, ssh / "id_ed25519")
    (ssh / "id_ed25519").chmod(0o600)
    target = f"{sshd.user}@127.0.0.1:{fake_host.port}"
    empty = tmp_path / "empty.toml"
    empty.write_text('[hosts.other]\naddress = "127.0.0.9"\n')  # unused
    refused = gpudash("probe", target, "--config", str(empty))
    assert refused.returncode == 1
    assert "host key unknown" in refused.stdout and "--accept-new-host-key" in refused.stdout
    accepted = gpudash("probe", target, "--accept-new-host-key", "--config", str(empty))
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    [said] = accepted.stderr.splitlines()
    assert said == (
        f"gpudash: {target}: recorded [127.0.0.1]:{fake_host.port} "
        f"{sshd.host_key_fingerprint} in {ssh / 'known_hosts'}"
    )
    again = gpudash("probe", target, "--config", str(empty))  # strict now trusts it
    assert again.returncode == 0 and again.stderr == ""


def test_report_says_where_it_wrote_and_two_hosts_are_one_line_not_an_argparse_error(
    tmp_path: Path,
) -> None:
    saved = str(FIXTURES / "saved")
    out = tmp_path / "t.md"
    done = gpudash("report", "h200-1x", "-o", str(out), "--replay", saved)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == f"gpudash: wrote the report of h200-1x to {out}, worst finding: fail\n"
    assert out.read_text().startswith("#")
    two = gpudash("report", "h200-1x", "dgx-h200", "--replay", saved)
    assert two.returncode == 2 and two.stdout == ""
    assert two.stderr == (
        "gpudash: report takes one host (h200-1x dgx-h200 given): run it once per host,"
        " or `gpudash check h200-1x dgx-h200` for all of them\n"
    )


def test_probe_names_an_unreadable_gpu_and_a_cut_off_network_check(tmp_path: Path) -> None:
    """The A40 capture's GPU 4 is in ERR! (nvidia-smi printed no name for it); a network
    check cut off before it printed anything has no host to name either."""
    a40 = gpudash("probe", "--replay", str(FIXTURES / "saved" / "pcie-a40"))
    [gpus] = [x for x in a40.stdout.splitlines() if " gpus " in x]
    assert "7× NVIDIA A40, 1× unreadable (ERR!) · " in gpus, gpus
    saved = tmp_path / "cut"
    shutil.copytree(FIXTURES / "saved" / "h200-1x", saved)
    (saved / "network.target.1.txt").write_text("")
    meta = saved / "meta.json"
    meta.write_text(meta.read_text().replace('"target.1": 0', '"target.1": null'))
    cut = gpudash("probe", "--replay", str(saved))
    [network] = [x for x in cut.stdout.splitlines() if " network " in x]
    assert "None" not in network, network
    assert "a site (its check was cut off) FAILED (no answer)" in network, network
    check = gpudash("check", "--replay", str(saved))
    assert "? unreachable (?)" not in check.stdout
    assert (
        "  WARN  network.unreachable: a site check was cut off before it answered"
        " (the probe's time ran out)"
    ) in check.stdout.splitlines()
