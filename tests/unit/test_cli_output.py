"""What scripts and people read from the CLI (issue 23, items 16-17): `parse` that says when
a file is not the tool's output and summarises it as text, `report -o` whose exit code says
the file was written, `check --replay` of one host's capture, the JSON envelope, `--fail-on`
and `--format prom` (checked with prometheus_client's own parser of the text format)."""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpudash import __version__
from gpudash.cli.main import main
from gpudash.cli.prom import escape_label_value, render_prom
from gpudash.saved import save_host
from tests.support import FIXTURES
from tests.support.hosts import failed, host, target, with_data

PUBLIC = FIXTURES / "public"
H200 = FIXTURES / "h200-1x"
OK_NET = {"target.1": target("https://huggingface.co")}


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    root = tmp_path / "saved"
    save_host(root, host(name="good", network=OK_NET))
    save_host(root, host("pcie-a40", name="a40"))
    save_host(root, host(name="warny"))  # the H200 capture's one network target is down
    save_host(root, failed("down", "connection refused"))
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("smi", "no nvidia-smi table found"),
        ("topo", "no `nvidia-smi topo -m` matrix found"),
        ("query", "no `nvidia-smi --query-gpu` CSV found (a noheader one needs --fields)"),
        ("nvlink", "no `nvidia-smi nvlink --status` output found"),
        ("nvcc", "no `nvcc --version` output found"),
    ],
)
def test_parse_of_another_tools_output_exits_1_naming_what_is_missing(capsys, kind, line):
    other = H200 / ("smi.txt" if kind != "smi" else "topo_m.txt")
    rc, out, err = run(capsys, "parse", kind, str(other))
    assert (rc, out) == (1, "")
    assert err == f"gpudash: {other}: {line}\n"


def test_parse_query_of_a_text_file_exits_1_and_not_json_of_its_lines(capsys):
    """Issue 33, item 7: any text has lines a CSV parser reads as rows (the README gave rc 0
    and 152 lines of JSON); a header not of nvidia-smi's column names is not its output."""
    readme_like = Path(__file__)
    rc, out, err = run(capsys, "parse", "query", str(readme_like))
    assert (rc, out) == (1, "")
    assert err.startswith(f"gpudash: {readme_like}: no `nvidia-smi --query-gpu` CSV found")


def test_parse_text_summarises_the_table_a_person_reads(capsys):
    # --text between KIND and FILE: argparse alone leaves FILE "unrecognized" there
    rc, out, err = run(capsys, "parse", "smi", "--text", str(PUBLIC / "smi-a40-8x-525-err.txt"))
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "driver 525.60.13, CUDA 12.0, 8 GPUs"
    assert lines[3] == "  GPU 2: NVIDIA A40  821/46068 MiB  40C  0%"
    assert lines[5].startswith("  GPU 4: ?") and lines[5].endswith("ERR!")
    rc, out, _ = run(
        capsys, "parse", "topo", str(PUBLIC / "topo-h100-4x-nv6-4nic-spaces.txt"), "--text"
    )
    assert out.splitlines()[0] == "4 GPUs, 4 NICs; every GPU pair on NVLink (at least NV6)"
    rc, out, _ = run(
        capsys, "parse", "--text", "nvlink", str(PUBLIC / "nvlink-v100-inactive-links.txt")
    )
    assert out == "GPU 3: Tesla V100-SXM2-32GB: 4 of 6 links active at 25.781 GB/s\n"


def _envelope_ok(doc: dict) -> None:
    assert list(doc)[:3] == ["schema", "gpudash_version", "generated_at"]
    assert doc["schema"] == 1 and isinstance(doc["schema"], int)
    assert doc["gpudash_version"] == __version__
    when = datetime.datetime.fromisoformat(doc["generated_at"].replace("Z", "+00:00"))
    now = datetime.datetime.now(datetime.timezone.utc)
    assert abs((now - when).total_seconds()) < 60


def test_every_json_document_says_its_schema_version_and_time(saved, capsys):
    for argv in (
        ["probe", "--replay", str(saved), "--json"],
        ["check", "--replay", str(saved), "--json"],
        ["check", "--replay", str(saved), "--format", "json"],
        ["report", "good", "--replay", str(saved), "--format", "json"],
        ["parse", "nvcc", str(H200 / "nvcc.txt")],
    ):
        _, out, err = run(capsys, *argv)
        assert err == "", argv
        _envelope_ok(json.loads(out))


def test_report_to_a_file_exits_0_when_written_even_for_a_failing_host(saved, capsys, tmp_path):
    target_file = tmp_path / "a40.md"
    rc, out, err = run(capsys, "report", "a40", "--replay", str(saved), "-o", str(target_file))
    said = f"gpudash: wrote the report of a40 to {target_file}, worst finding: fail\n"
    assert (rc, out, err) == (0, "", said)  # said on stderr (issue 33: -o was silent)
    assert "- **FAIL** `gpus.err`: GPU 4 in ERR! state" in target_file.read_text()
    rc, _, err = run(capsys, "report", "down", "--replay", str(saved), "-o", str(target_file))
    assert rc == 0 and "connection refused" in target_file.read_text()
    rc, _, err = run(
        capsys, "report", "a40", "--replay", str(saved), "-o", str(tmp_path / "no/x.md")
    )
    assert rc == 2 and err.startswith(f"gpudash: {tmp_path / 'no/x.md'}: ")


def test_check_replays_one_hosts_capture_directory(saved, capsys):
    rc, out, err = run(capsys, "check", "--replay", str(saved / "a40"))
    assert (rc, err) == (1, "")
    assert out.splitlines()[0].startswith("a40: FAIL (")
    rc, out, _ = run(capsys, "probe", "--replay", str(saved / "good"))
    assert rc == 0 and out.splitlines()[-1] == "1 of 1 hosts answered"


def test_fail_on_sets_the_exit_threshold(saved, capsys):
    rc, out, _ = run(capsys, "check", "--replay", str(saved), "warny")
    assert rc == 0 and out.startswith("warny: WARN (")
    rc, _, _ = run(capsys, "check", "--replay", str(saved), "warny", "--fail-on", "warn")
    assert rc == 1
    rc, _, _ = run(capsys, "check", "--replay", str(saved), "good", "--fail-on", "warn")
    assert rc == 0  # info only
    rc, _, err = run(capsys, "check", "--replay", str(saved), "--fail-on", "info")
    assert rc == 2 and "--fail-on" in err


def test_prom_output_is_valid_exposition_with_one_block_per_family(saved, capsys, tmp_path):
    (tmp_path / "textfile").mkdir()
    out_file = tmp_path / "textfile" / "gpudash.prom"
    rc, out, err = run(
        capsys, "check", "--replay", str(saved), "--format", "prom", "-o", str(out_file)
    )
    assert (rc, out, err) == (1, "", "")  # a40 and down have fails
    text = out_file.read_text()
    assert text.endswith("\n")
    assert list(out_file.parent.iterdir()) == [out_file]  # the temporary file was renamed, not left
    names = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(names) == len(set(names))  # each family once, as the textfile collector needs
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert all(f.type == "gauge" for f in families.values())

    def value(name: str, **labels: str) -> float:
        (hit,) = [s.value for s in families[name].samples if s.labels == labels]
        return hit

    assert value("gpudash_findings", host="a40", severity="fail") == 3
    assert value("gpudash_findings", host="good", severity="fail") == 0
    assert value("gpudash_host_up", host="down") == 0
    assert value("gpudash_host_up", host="good") == 1
    assert value("gpudash_worst_severity", host="warny") == 2
    assert value("gpudash_finding", host="a40", code="gpus.err", severity="fail") == 1
    assert value("gpudash_gpus", host="a40") == 8
    assert value("gpudash_gpu_error", host="a40", gpu="4") == 1
    info = [s.labels for s in families["gpudash_gpu_info"].samples if s.labels["host"] == "good"]
    assert info == [
        {
            "host": "good",
            "gpu": "0",
            "name": "NVIDIA H200",
            "uuid": "GPU-9f16c755-ed0b-7acb-3b4a-4eac310d0d7b",
            "cc": "9.0",
            "driver": "580.159.04",
            "cuda": "13.0",
        }
    ]
    assert value("gpudash_gpu_memory_total_bytes", host="good", gpu="0") == 143771 * 2**20
    assert 'gpudash_gpus{host="down"}' not in text  # unknown is absent, never 0


def test_prom_label_values_from_a_hostile_host_cannot_break_the_format():
    evil = 'H200"} 1\ngpudash_host_up{host="x"} 1 \\ \x1b]0;pwned\x07'
    result = host(name="evil")
    gpu = dataclasses.replace(result.data("gpus").gpus[0], name=evil)
    result = with_data(result, "gpus", gpus=(gpu,))
    text = render_prom({"evil": ()}, {"evil": result}, generated_at=0.0)
    assert "\x1b" not in text and "\x07" not in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    (sample,) = families["gpudash_gpu_info"].samples
    assert sample.labels["name"].startswith('H200"} 1 gpudash_host_up{host="x"} 1 \\ ')
    assert [s.labels for s in families["gpudash_host_up"].samples] == [{"host": "evil"}]
    assert escape_label_value('a\\b"c') == 'a\\\\b\\"c'
