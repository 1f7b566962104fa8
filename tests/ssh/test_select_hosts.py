"""Selecting hosts on the command line: names, shell-style globs, `--tag` (repeatable) and
ad-hoc `user@host:port` targets, the same for probe, check, report, run and tasks; anything
that selects nothing is one line with a "did you mean" (issue 23, item 5). Over the real sshd."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudash.cli.main import main
from tests.support.configs import host_table, write_config
from tests.support.sshd import FakeHost, Sshd


def _config(sshd: Sshd, hosts: list[FakeHost], path: Path) -> str:
    """gpu-a0, gpu-a1 tagged a; gpu-b2 tagged b (and a task to run)."""
    tags = ['["a"]', '["a", "x"]', '["b"]']
    names = ["gpu-a0", "gpu-a1", "gpu-b2"]
    text = "".join(
        sshd.host_toml(h, name) + f"tags = {t}\n\n"
        for h, name, t in zip(hosts, names, tags, strict=True)
    )
    text += '[tasks.hello]\ntitle = "say where"\nkind = "script"\n'
    text += 'run = "echo on $GPUDASH_TEST_HOST"\n'
    path.write_text(text)
    return str(path)


def _probed(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(argv) == 0, capsys.readouterr().err
    return [h["name"] for h in json.loads(capsys.readouterr().out)["hosts"]]


def test_globs_and_tags_select_the_hosts_of_probe_and_check(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = _config(sshd, fake_hosts[:3], tmp_path / "c.toml")
    assert _probed(["probe", "--json", "gpu-a*", "--config", config], capsys) == [
        "gpu-a0",
        "gpu-a1",
    ]
    assert _probed(["probe", "--json", "--tag", "b", "--config", config], capsys) == ["gpu-b2"]
    both = ["probe", "--json", "--tag", "x", "--tag", "b", "--config", config]
    assert _probed(both, capsys) == ["gpu-a1", "gpu-b2"]
    main(["check", "--json", "--tag", "b", "--config", config])
    assert [h["name"] for h in json.loads(capsys.readouterr().out)["hosts"]] == ["gpu-b2"]


def test_run_and_tasks_take_globs_and_tags(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = _config(sshd, fake_hosts[:3], tmp_path / "c.toml")
    assert main(["run", "hello", "--tag", "a", "--yes", "--config", config]) == 0
    out = capsys.readouterr().out
    assert "gpu-a0 | on h0" in out and "gpu-a1 | on h1" in out and "gpu-b2" not in out
    assert main(["tasks", "gpu-b*", "--config", config]) == 0
    assert "hello" in capsys.readouterr().out
    assert main(["tasks", "gpu-a*", "--config", config]) == 2
    assert "'gpu-a*' matches 2 hosts (gpu-a0, gpu-a1): name one" in capsys.readouterr().err


def test_an_ad_hoc_user_at_host_port_target_needs_no_config_entry(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = _config(sshd, fake_hosts[:3], tmp_path / "c.toml")
    ssh_dir = Path.home() / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "config").write_text(
        f"Host 127.0.0.1\n  IdentityFile {sshd.client_key}\n"
        f"  UserKnownHostsFile {sshd.known_hosts}\n"
    )
    target = f"{sshd.user}@127.0.0.1:{fake_hosts[4].port}"
    assert _probed(["probe", "--json", target, "--config", config], capsys) == [target]
    assert main(["run", "hello", target, "--config", config]) == 0
    assert f"{target} | on h4" in capsys.readouterr().out
    code = main(["report", target, "--format", "json", "--config", config])
    report = json.loads(capsys.readouterr().out)
    assert code == 0  # the report was written (its exit code is not the verdict)
    assert report["host"] == target and report["state"] == "ready"
    assert report["worst"] == "fail"  # answered, and no GPU tools on the test host


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["probe", "gpu-a9"], "unknown host 'gpu-a9' in {c} (did you mean 'gpu-a1'?)"),
        (["check", "gpu-c*"], "no host in {c} matches 'gpu-c*' (hosts: gpu-a0, gpu-a1, gpu-b2)"),
        (["run", "hello", "--tag", "bb"], "unknown tag 'bb' in {c} (did you mean 'b'?)"),
        (["report", "gpu-b"], "unknown host 'gpu-b' in {c} (did you mean 'gpu-b2'?)"),
        (["tasks", "nosuch"], "(an ad-hoc target is user@host[:port])"),
        (["probe", "me@host:99999"], "'me@host:99999': port 99999 is out of range (1-65535)"),
        (["probe", "x"], "'x' is a tag, not a host: --tag x"),  # not "did you mean gpu-a1?"
        (["report", "b"], "'b' is a tag, not a host (gpu-b2): name one"),
    ],
)
def test_what_selects_nothing_is_one_line_with_a_did_you_mean(
    sshd: Sshd,
    fake_hosts: list[FakeHost],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
):
    config = _config(sshd, fake_hosts[:3], tmp_path / "c.toml")
    assert main([*argv, "--config", config]) == 2
    err = capsys.readouterr().err
    assert said.format(c=config) in err and len(err.strip().splitlines()) == 1


# --- host ranges in the config -------------------------------------------------------------------


def test_a_host_range_in_the_config_is_one_host_per_number_reached_through_ssh_config(
    sshd: Sshd, fake_hosts: list[FakeHost], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    ssh_dir = Path.home() / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "config").write_text(
        "".join(
            f"Host rack-0{i + 1}\n  HostName 127.0.0.1\n  Port {fake_hosts[i].port}\n"
            for i in range(3)
        )
    )
    config = tmp_path / "c.toml"
    rack = host_table(
        '"rack-[01-03]"',  # no address or port: ~/.ssh/config's Host blocks give them
        user=sshd.user,
        identity_file=str(sshd.client_key),
        known_hosts=str(sshd.known_hosts),
        tags=["rack"],
    )
    write_config(config, rack)
    names = _probed(["probe", "--json", "--config", str(config)], capsys)
    assert names == ["rack-01", "rack-02", "rack-03"]
    assert main(["tasks", "rack-03", "--config", str(config)]) == 0
    assert "venv" in capsys.readouterr().out
    assert main(["probe", "--json", "rack-02", "--config", str(config)]) == 0
    (host,) = json.loads(capsys.readouterr().out)["hosts"]
    assert host["state"] == "ready"
    assert "system" in host["sections"]  # it answered: the sshd's port came from ~/.ssh/config


def test_a_range_in_the_address_expands_alongside_and_a_bad_range_is_one_line(tmp_path: Path):
    from gpudash.config.load import ConfigError, parse_config

    config = parse_config(
        '[hosts."b300-[01-16]"]\naddress = "10.0.0.[11-26]"\ntags = ["b300"]\n', "t.toml"
    )
    assert [h.name for h in config.hosts][:2] == ["b300-01", "b300-02"]
    assert len(config.hosts) == 16 and config.hosts[-1].name == "b300-16"
    assert [config.hosts[0].address, config.hosts[-1].address] == ["10.0.0.11", "10.0.0.26"]
    assert all(h.tags == ("b300",) for h in config.hosts)
    with pytest.raises(ConfigError, match=r"address: its range gives 2 addresses for 3 hosts"):
        parse_config('[hosts."b[1-3]"]\naddress = "10.0.0.[1-2]"\n', "t.toml")
    with pytest.raises(ConfigError, match=r"range \[5-1\] runs backwards"):
        parse_config('[hosts."b[5-1]"]\n', "t.toml")
