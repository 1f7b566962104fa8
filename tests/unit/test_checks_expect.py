"""Expectations: parsed from the config with file, line and key on every mistake, merged
defaults < [expect.TAG] < host, and each unmet one a fail finding."""

from __future__ import annotations

import pytest

from gpudash.checks import run_checks
from gpudash.checks.finding import Severity
from gpudash.checks.fixes import fix_phrase
from gpudash.config.load import parse_config
from gpudash.config.model import ConfigError
from gpudash.probe.sections.env import _cuda_from_local
from gpudash.versions import local_cuda
from tests.support.hosts import C, df, host, model_dir, target


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "fleet.toml")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    ("text", "row"),
    [
        (
            '[hosts.b1]\nexpect = { min_cc = "ten" }\n',
            'fleet.toml:2: hosts.b1.expect.min_cc: expected a version like "10.0", got "ten"',
        ),
        (
            "[hosts.b1]\nexpect = { gpu = 8 }\n",
            "fleet.toml:2: hosts.b1.expect.gpu: unknown expectation (did you mean 'gpus'?)",
        ),
        (
            '[hosts.b1]\nexpect = { driver = "new" }\n',
            'fleet.toml:2: hosts.b1.expect.driver: expected a version like "580" or ">=580",'
            ' got "new"',
        ),
        (
            '[hosts.b1]\nexpect = { nvlink = "al" }\n',
            'fleet.toml:2: hosts.b1.expect.nvlink: unknown value "al"; expected one of "all",'
            ' "none", "any" (did you mean "all"?)',
        ),
        (
            '[hosts.b1]\n[hosts.b1.expect]\nmin_free_gb = { "/root/models" = -5 }\n',
            'fleet.toml:3: hosts.b1.expect.min_free_gb."/root/models": expected a number of GB'
            " above 0, got -5",
        ),
        (
            '[hosts.b1]\n[hosts.b1.expect]\nmodels = ["ok/repo", "not a repo"]\n',
            "fleet.toml:3: hosts.b1.expect.models[1]: expected a Hugging Face repo id like"
            ' org/name, got "not a repo"',
        ),
        (
            '[hosts.b1]\n[hosts.b1.expect]\nmodels = [{ repo = "a/b", gate = true }]\n',
            "fleet.toml:3: hosts.b1.expect.models[0].gate: unknown key (did you mean 'gated'?)",
        ),
        (
            '[defaults]\nexpect = { hf_token = "yes" }\n[hosts.b1]\n',
            "fleet.toml:2: defaults.expect.hf_token: expected true or false, got a string",
        ),
        (
            '[hosts.b1]\n[expect.b300]\ngpus = "eight"\nmin_nvlink = 0\n',
            "fleet.toml:3: expect.b300.gpus: expected an integer, got a string",
        ),
    ],
)
def test_a_malformed_expectation_is_a_config_error_with_file_line_and_key(text, row):
    assert row in problems(text)


def test_every_bad_key_of_an_expect_tag_table_is_reported_at_once():
    rows = problems('[hosts.b1]\n[expect.b300]\ngpus = "eight"\nmin_nvlink = 0\nmin_ccc = 1\n')
    assert rows == [
        "fleet.toml:3: expect.b300.gpus: expected an integer, got a string",
        "fleet.toml:4: expect.b300.min_nvlink: must be at least 1, got 0",
        "fleet.toml:5: expect.b300.min_ccc: unknown expectation (did you mean 'min_cc'?)",
    ]


def test_expectations_merge_defaults_then_tags_then_the_host():
    config = parse_config(
        """
[defaults]
expect = { driver = ">=580", gpus = 1 }
[expect.h200]
gpus = 8
gpu_name = "*H200*"
[hosts.a]
tags = ["h200"]
expect = { gpu_name = "NVIDIA H200" }
[hosts.b]
""",
        "t.toml",
    )
    a, b = config.hosts
    assert a.expect is not None and b.expect is not None
    assert (str(a.expect.driver), a.expect.gpus, a.expect.gpu_name) == (">=580", 8, "NVIDIA H200")
    assert (str(b.expect.driver), b.expect.gpus, b.expect.gpu_name) == (">=580", 1, None)
    assert parse_config("[hosts.c]\n", "t.toml").hosts[0].expect is None


def config_for(expect: str, name: str = "h200-1x") -> object:
    return parse_config(f"[hosts.{name}.expect]\n{expect}\n", "t.toml").hosts[0]


def fails(result, expect: str) -> dict[str, str]:
    found = run_checks(result, config_for(expect))
    return {f.code: f.title for f in found if f.family == "expect" and f.severity is Severity.FAIL}


# (expectation, the real H200 meets it?, title when it does not)
H200_CASES = [
    ("gpus = 1", True, None),
    ("gpus = 8", False, "1 GPUs here, expected 8"),
    ('gpu_name = "H200*"', True, None),
    ('gpu_name = "*B300*"', False, "GPU NVIDIA H200 does not match '*B300*'"),
    ('min_cc = "9.0"', True, None),
    ('min_cc = "10.0"', False, "compute capability 9.0 (NVIDIA H200) below 10.0"),
    ('driver = ">=580"', True, None),
    ('driver = ">=590"', False, "driver 580.159.04 here, expected >=590"),
    ('cuda = ">=13.0"', True, None),
    ('cuda = ">=13.1"', False, "driver CUDA 13.0 here, expected >=13.1"),
    ('nvcc = "13.0"', True, None),
    (
        'nvcc = "12.8"',
        False,
        "nvcc 13.0.88 (/usr/local/cuda/bin/nvcc) first on PATH, expected 12.8",
    ),
    ('python = "3.12"', True, None),
    ('python = "3.13"', False, "no python 3.13 (have: 3.12.3)"),
    ('torch = "2.11.*"', True, None),
    ('torch = "2.10.*"', False, "no torch 2.10.* in any venv (have: 2.11.0)"),
    ("hf_token = false", True, None),
    ("hf_token = true", False, "no HF token on the host"),
    (
        'reachable = ["huggingface.co"]',
        False,
        "huggingface.co unreachable: curl: (6) Could not resolve host: huggingface.co",
    ),
    (
        'models = ["moonshotai/Kimi-K2-Instruct"]',
        False,
        "model moonshotai/Kimi-K2-Instruct not on the host",
    ),
]


@pytest.mark.parametrize(("expect", "met", "title"), H200_CASES)
def test_each_expectation_is_checked_against_the_real_h200(expect, met, title):
    found = fails(host(), expect)
    if met:
        assert found == {}
    else:
        assert list(found.values()) == [title]


def test_nvlink_expectations_fail_on_a_pcie_pair_and_on_a_pcie_only_box():
    pair = host("dgx-h200", topology={"topo": C / "topo-h200-8x-varied-pcie-pair.txt"})
    assert fails(host("dgx-h200"), 'nvlink = "all"\nmin_nvlink = 18') == {}
    assert fails(pair, 'nvlink = "all"') == {
        "expect.nvlink": "NVLink on 27 of 28 GPU pairs, expected 'all'"
    }
    nv17 = host("dgx-h200", topology={"topo": C / "topo-h200-8x-varied-nv17.txt"})
    assert fails(nv17, "min_nvlink = 18") == {
        "expect.min_nvlink": "weakest GPU pair has NV17, expected NV18"
    }
    assert list(fails(host("pcie-a40"), 'nvlink = "any"')) == ["expect.nvlink"]
    assert fails(host("pcie-a40"), 'nvlink = "none"') == {}


def test_free_space_and_models_are_checked_against_the_model_dirs():
    models = {
        "df": df("/root/models", 100),
        "dir.1": model_dir("/root/models", ("Kimi-K2-Instruct", 61, 2)),
    }
    found = fails(
        host(models=models),
        'min_free_gb = { "/root/models" = 600 }\nmodels = ["moonshotai/Kimi-K2-Instruct"]',
    )
    assert found == {
        "expect.min_free_gb": "100 GB free at /root/models, expected 600 GB",
        "expect.model_incomplete": "model moonshotai/Kimi-K2-Instruct at "
        "/root/models/Kimi-K2-Instruct is incomplete",
    }
    whole = {
        **models,
        "df": df("/root/models", 900),
        "dir.1": model_dir("/root/models", ("Kimi-K2-Instruct", 61, 0)),
    }
    assert fails(host(models=whole), 'min_free_gb = { "/root/models" = 600 }') == {}


def test_an_expectation_the_probe_cannot_verify_is_a_warn_not_a_fail():
    found = run_checks(
        host(), config_for('min_free_gb = { "/data" = 10 }\nreachable = ["pypi.org"]')
    )
    unverified = [f.title for f in found if f.code == "expect.unverified"]
    assert unverified == [
        "free space of /data not known",
        "pypi.org is not a probed network target",
    ]
    assert all(f.severity is Severity.WARN for f in found if f.code == "expect.unverified")


def test_a_met_expectation_set_says_ok_and_a_missing_model_offers_the_model_task():
    ok = run_checks(
        host(network={"target.1": target("https://huggingface.co")}), config_for("gpus = 1")
    )
    assert [f.title for f in ok if f.code == "expect.ok"] == ["meets every expectation (gpus)"]
    found = run_checks(host(), config_for('models = ["Qwen/Qwen3-8B"]'))
    (missing,) = [f for f in found if f.code == "expect.model_missing"]
    assert (missing.fix_task, missing.fix_key, dict(missing.fix_params)) == (
        "model",
        "m",
        {"repo": "Qwen/Qwen3-8B"},
    )


@pytest.mark.parametrize(
    ("version", "cuda"),
    [
        ("2.11.0+cu130", (13, 0)),
        ("2.6.0+cu126", (12, 6)),
        ("0.1.6+cu124torch2.4", (12, 4)),  # FlashInfer's tag goes on after the CUDA digits
        ("2.11.0", None),
        ("2.11.0+cpu", None),
        ("1.0+cu1234", None),  # four digits: not a cuNNN tag
        (None, None),
    ],
)
def test_a_wheels_local_tag_names_the_cuda_it_was_built_for(version, cuda):
    assert local_cuda(version) == cuda


def test_the_env_parser_reads_a_torch_wheels_cuda_from_its_tag_like_the_wheel_check():
    """One reading of `+cuNNN`: the probe's venv record and the wheels check agree."""
    assert _cuda_from_local("2.9.1+cu128") == "12.8"
    assert _cuda_from_local("2.9.1") is None


def test_the_fixing_task_is_named_the_same_way_in_every_headless_face():
    assert fix_phrase("torch", "t") == "[task torch (key t)]"
    assert fix_phrase("torch", None) == "[task torch]"
    assert fix_phrase("model", "m", "markdown") == "(task `model`, key `m`)"
    assert fix_phrase("model", None, "markdown") == "(task `model`)"
    assert fix_phrase(None, "t") == ""
