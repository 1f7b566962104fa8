"""`gpudash check` and `gpudash report` through the real CLI, over replayed captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudash.cli.main import main
from gpudash.saved import save_host
from tests.support.hosts import C, failed, host, target

OK_NET = {"target.1": target("https://huggingface.co")}


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A --save directory: a healthy H200, the 8x A40 with an ERR! GPU, a host that was down."""
    root = tmp_path / "saved"
    save_host(root, host(name="good", network=OK_NET))
    save_host(root, host("pcie-a40", name="a40"))
    save_host(root, failed("down", "connection refused"))
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_check_exits_0_for_a_host_without_fail_findings(saved, capsys):
    rc, out, err = run(capsys, "check", "--replay", str(saved), "good")
    assert (rc, err) == (0, "")
    assert out.splitlines()[0] == "good: INFO (1 info, 6 ok)"  # the 6th: health.ok
    assert "env.no_serving_engine" in out and "health." not in out  # ok lines are not listed


def test_check_exits_1_when_any_host_has_a_fail_finding(saved, capsys):
    rc, out, _ = run(capsys, "check", "--replay", str(saved))
    assert rc == 1
    assert "a40: FAIL (3 fail, 2 warn, 1 info, 2 ok)" in out  # ok: disk, health
    assert "  FAIL  gpus.err: GPU 4 in ERR! state" in out
    assert "  FAIL  host.unreachable: host did not answer: connection refused" in out
    assert "[task torch (key t)]" in out


def test_check_json_lists_each_hosts_findings_and_worst_severity(saved, capsys):
    rc, out, _ = run(capsys, "check", "--replay", str(saved), "--json", "a40", "good")
    doc = json.loads(out)
    assert rc == 1 and doc["ok"] is False
    assert [(h["name"], h["worst"]) for h in doc["hosts"]] == [("a40", "fail"), ("good", "info")]
    first = doc["hosts"][0]["findings"][0]
    assert set(first) >= {"severity", "code", "title", "why", "fix", "facts", "fix_task", "fix_key"}


def test_check_exits_2_for_an_unknown_host_or_a_bad_config(saved, capsys, tmp_path):
    rc, _, err = run(capsys, "check", "--replay", str(saved), "nope")
    assert rc == 2 and "unknown host 'nope'" in err
    bad = tmp_path / "bad.toml"
    bad.write_text('[hosts.good]\nexpect = { min_cc = "ten" }\n')
    rc, _, err = run(capsys, "--config", str(bad), "check", "--replay", str(saved))
    assert rc == 2
    assert (
        err.strip()
        == f'{bad}:2: hosts.good.expect.min_cc: expected a version like "10.0", got "ten"'
    )


def test_a_config_with_replay_brings_its_expectations_to_the_captures(saved, capsys, tmp_path):
    config = tmp_path / "fleet.toml"
    config.write_text('[hosts.good]\nexpect = { gpus = 8, driver = ">=580" }\n')
    rc, out, _ = run(capsys, "--config", str(config), "check", "--replay", str(saved))
    assert rc == 1
    assert "  FAIL  expect.gpus: 1 GPUs here, expected 8" in out
    assert "a40" not in out  # not in this config


def test_report_writes_markdown_to_a_file_and_json_to_stdout(saved, capsys, tmp_path):
    target_file = tmp_path / "a40.md"
    rc, out, _ = run(capsys, "report", "a40", "--replay", str(saved), "-o", str(target_file))
    assert (rc, out) == (0, "")  # written: a report's exit code is not the verdict
    text = target_file.read_text()
    assert text.startswith("# Triage report: a40\n")
    assert "- **FAIL** `gpus.err`: GPU 4 in ERR! state" in text
    rc, out, _ = run(capsys, "report", "good", "--replay", str(saved), "--format", "json")
    doc = json.loads(out)
    assert (rc, doc["host"], doc["worst"]) == (0, "good", "info")
    assert doc["sections"]["gpus"]["gpus"][0]["name"] == "NVIDIA H200"


def test_the_varied_old_driver_capture_fails_check_through_the_cli(tmp_path, capsys):
    root = tmp_path / "s"
    old = {
        "query": C / "query-h200-1x-varied-old-driver.txt",
        "smi": C / "smi-h200-1x-varied-old-driver.txt",
    }
    save_host(root, host(name="old", gpus=old, network=OK_NET))
    rc, out, _ = run(capsys, "check", "--replay", str(root))
    assert rc == 1
    assert "FAIL  driver.too_old_for_nvcc: nvcc 13.0 needs driver >= 580.65.06" in out


def test_an_unknown_host_reads_the_same_in_every_command(saved, capsys, tmp_path, monkeypatch):
    """One line, exit 2, the nearest name and the hosts: whichever command was given it."""
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    config = tmp_path / "fleet.toml"
    config.write_text(
        '[hosts.good]\naddress = "10.0.0.1"\n[hosts.a40]\naddress = "10.0.0.2"\n'
        '[hosts.down]\naddress = "10.0.0.3"\n'
    )
    in_config = (
        f"gpudash: unknown host 'goo' in {config} (did you mean 'good'?) (hosts: good, a40, down)"
    )
    in_saved = (
        f"gpudash: unknown host 'goo' in {saved} (did you mean 'good'?) (hosts: a40, down, good)"
    )
    for argv, line in [
        (["probe", "--replay", str(saved), "goo"], in_saved),
        (["check", "--replay", str(saved), "goo"], in_saved),
        (["report", "--replay", str(saved), "goo"], in_saved),
        (["--config", str(config), "check", "--replay", str(saved), "good", "goo"], in_config),
        (["--config", str(config), "report", "goo", "--replay", str(saved)], in_config),
        (["--config", str(config), "probe", "goo"], in_config),
        (["--config", str(config), "tasks", "goo"], in_config),
        (["--config", str(config), "run", "uv", "good", "goo"], in_config),
    ]:
        rc, out, err = run(capsys, *argv)
        assert (rc, out, err) == (2, "", line + "\n"), argv


def test_version_and_check_json_say_the_date_of_the_stack_facts(saved, capsys):
    from gpudash.checks.facts import FACTS_DATE

    with pytest.raises(SystemExit):
        main(["--version"])
    assert f"(stack facts of {FACTS_DATE})" in capsys.readouterr().out
    _, out, _ = run(capsys, "check", "--replay", str(saved), "--json")
    assert json.loads(out)["facts_date"] == FACTS_DATE
