"""`gpudash report`: the Markdown triage report of an 8-GPU host, readable in a ticket, with
every remote string escaped."""

from __future__ import annotations

from gpudash.checks import run_checks
from gpudash.report import md, render_json, render_markdown
from tests.support.hosts import C, df, host, model_dir


def report(result) -> str:
    return render_markdown(result, run_checks(result))


def test_the_8_gpu_report_has_every_section_in_ticket_order():
    text = report(host("dgx-h200"))
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [
        "# Triage report: dgx-h200",
        "## Findings",
        "## System",
        "## GPUs",
        "## Topology",
        "## Toolkit",
        "## Env",
        "## Models",
        "## Network",
        "## Health",
        "## Verify",
        "## Serve",
    ]
    assert "Probe: ready. Verdict: **WARN** (1 warn, 1 info, 6 ok)." in text  # 6th: health.ok


def test_the_topology_matrix_has_a_row_per_gpu_with_links_and_affinity():
    lines = report(host("dgx-h200")).splitlines()
    assert (
        "|  | GPU0 | GPU1 | GPU2 | GPU3 | GPU4 | GPU5 | GPU6 | GPU7 | CPU Affinity"
        " | NUMA Affinity |" in lines
    )
    assert (
        "| GPU0 | X | NV18 | NV18 | NV18 | NV18 | NV18 | NV18 | NV18 | 0-55,112-167 | 0 |" in lines
    )
    assert "| GPU7 | NIC11 (mlx5\\_11) |" in lines


def test_a_finding_shows_severity_code_why_fix_task_and_facts():
    nv17 = host("dgx-h200", topology={"topo": C / "topo-h200-8x-varied-nv17.txt"})
    lines = report(nv17).splitlines()
    at = lines.index(
        "- **WARN** `nvlink.fewer_links`: 1 GPU pair(s) have fewer NVLinks than the others (NV18)"
    )
    assert lines[at + 1].startswith("  - Why: A pair with fewer links has a link down")
    assert lines[at + 3] == "  - Facts: pairs = GPU0-GPU1 NV17; usual = NV18"
    assert "| GPU0 | X | NV17 | NV18 |" in "\n".join(lines)
    engine = [line for line in lines if "`env.no_serving_engine`" in line]
    assert engine == [
        "- **INFO** `env.no_serving_engine`: neither SGLang nor vLLM is installed in any venv"
    ]
    assert (
        "  - Fix: Install SGLang (with FlashInfer) or vLLM into the serving venv."
        " (task `serving`, key `s`)" in lines
    )


def test_the_gpu_table_toolkit_env_models_and_network_show_the_probed_values():
    models = {
        "df": df("/root/models", 900),
        "dir.1": model_dir("/root/models", ("Kimi-K2-Instruct", 61, 2)),
    }
    text = report(host("dgx-h200", models=models))
    assert (
        "| 0 | NVIDIA H200 | 9.0 sm\\_90 | 0.0 GiB / 140.4 GiB | 39 C | 0 % | 79 / 700 W | on"
        " | Disabled | 0 | 00000000:00:06.0 |" in text
    )
    assert "| /usr/local/cuda/bin/nvcc | 13.0.88 |   |" in text
    assert (
        "| /opt/torch/.venv | venv | 3.12.3 | 2.11.0 | 13.0 | transformers 5.17.0, triton 3.6.0 |"
        in text
    )
    assert "| /root/models | Kimi-K2-Instruct | 590.0 GB | NO | 2 of 61 shards |" in text
    assert (
        "| https://huggingface.co | failed |   | 0 ms |"
        " curl: (6) Could not resolve host: huggingface.co |" in text
    )
    assert "HF token: none." in text


def test_remote_strings_cannot_break_a_table_or_inject_markup():
    hostile = (
        (C.parent / "h200-1x" / "query_csv.txt")
        .read_text()
        .replace("NVIDIA H200,", "NVIDIA | H200 `rm` <b>[x](http://e)</b> *hi*,", 1)
    )
    text = report(host(gpus={"query": hostile}))
    row = next(line for line in text.splitlines() if line.startswith("| 0 |"))
    assert "NVIDIA \\| H200 \\`rm\\` \\<b\\>\\[x\\](http://e)\\</b\\> \\*hi\\*" in row
    assert row.count(" | ") == 10  # eleven cells, the name's pipe escaped
    assert md("a\nb|c") == "a b\\|c"


def test_the_json_report_carries_findings_and_every_sections_data():
    result = host("dgx-h200")
    doc = render_json(result, run_checks(result))
    assert doc["worst"] == "warn"
    assert doc["counts"] == {"ok": 6, "info": 1, "warn": 1, "fail": 0}
    assert set(doc["sections"]) == {
        "system",
        "gpus",
        "topology",
        "toolkit",
        "env",
        "models",
        "network",
        "health",
        "verify",
        "serve",
    }
    assert doc["sections"]["health"]["kernel"]["source"] == "dmesg"
    assert doc["sections"]["topology"]["summary"] == "all 28 pairs NV18"


def test_the_h200_report_shows_what_the_health_section_read_per_gpu():
    text = report(host("h200-1x"))
    health = text.split("## Health", 1)[1]
    assert "| 0 | 0000:00:06 | Idle | gen5/5 x16/16 | no | 0 | none |" in health
    assert "1 GPU(s) read · no Xid (dmesg)." in health
