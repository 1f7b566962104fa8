"""Task specs, rendering, CUDA tag choice, line assembly and masking: pure, no host."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from gpudash.config.load import parse_config
from gpudash.config.model import ConfigError
from gpudash.tasks.logs import LineAssembler, Masker
from gpudash.tasks.prepare import Facts, PrepareError, prepare
from gpudash.tasks.render import exports
from gpudash.tasks.spec import TaskSpecError, load_tasks, order

HOSTS = '[hosts.a]\naddress = "x"\n'


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(HOSTS + text, "c.toml")
    return [str(p) for p in info.value.problems]


def test_the_builtins_load_and_every_builtin_has_a_key():
    specs = load_tasks()
    assert {"uv", "venv", "torch", "serving", "model"} <= set(specs)
    assert all(s.key for s in specs.values())
    assert order(specs, ["serving"]) == ["uv", "venv", "torch", "serving"]


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            '[tasks.venv]\nparams = { path = "relative/dir" }\n',
            "c.toml:5: tasks.venv.params.path: expected an absolute path or one starting with"
            ' ~/, got "relative/dir"',
        ),
        (
            '[tasks.model]\nparams = { repo = "not a repo" }\n',
            "c.toml:5: tasks.model.params.repo: expected a Hugging Face repo id like org/name,"
            ' got "not a repo"',
        ),
        (
            '[tasks.torch]\nparams = { cuda = "12.8" }\n',
            'c.toml:5: tasks.torch.params.cuda: expected "auto", "cpu" or a CUDA tag cuNNN'
            ' (cu118, cu121, cu124, cu126, cu128, cu129, cu130, cu132), got "12.8"',
        ),
        (
            '[tasks.x]\ntitle = "x"\nkind = "pip"\nparams = { packages = ["ok", "rm -rf /"] }\n',
            "c.toml:7: tasks.x.params.packages[1]: expected a package spec like torch or"
            ' vllm==0.11.0, got "rm -rf /"',
        ),
        (
            '[tasks.x]\ntitle = "x"\nkind = "scrpt"\n',
            'c.toml:6: tasks.x.kind: unknown kind "scrpt" (did you mean "script"?)',
        ),
        (
            '[tasks.venv]\ntimeout = "soon"\n',
            'c.toml:5: tasks.venv.timeout: expected seconds or a duration like "45m", got "soon"',
        ),
        (
            '[tasks.x]\ntitle = "x"\nkind = "script"\nrun = "true"\nneeds = ["vnev"]\n',
            'c.toml:8: tasks.x.needs: unknown task "vnev" (did you mean "venv"?)',
        ),
        (
            '[tasks.x]\ntitle = "x"\nkind = "script"\nrun = "true"\nsecrets = ["hf token"]\n',
            "c.toml:8: tasks.x.secrets[0]: expected an environment variable name like HF_TOKEN,"
            ' got "hf token"',
        ),
        (
            '[tasks.x]\ntitle = "x"\nkind = "script"\nrun = "true"\nkey = "v"\n',
            'c.toml:8: tasks.x.key: key "v" is already task "venv"\'s',
        ),
    ],
)
def test_a_bad_task_table_is_one_problem_naming_file_line_and_key(table: str, expected: str):
    assert problems("\n" + table) == [expected]


def test_a_config_task_overrides_a_builtin_key_by_key():
    config = parse_config(HOSTS + '[tasks.venv]\nparams = { python = "3.11" }\n', "c.toml")
    venv = config.tasks["venv"]
    assert venv.params == {"path": "~/venvs/serve", "python": "3.11"}
    assert venv.needs == ("uv",)
    assert venv.builtin


def _torch(facts: Facts, **params: str) -> tuple[str, str, str]:
    """The index URL, the torch requirement and the --show note the torch task gets."""
    spec = load_tasks({"torch": {"params": params}} if params else None)["torch"]
    prepared = prepare(spec, facts)
    env = dict(
        shlex.split(line.removeprefix("export "))[0].split("=", 1)
        for line in prepared.script.splitlines()
        if line.startswith("export GPUDASH_") and "=" in line
    )
    return env["GPUDASH_INDEX_URL"].rsplit("/", 1)[-1], env["GPUDASH_PACKAGES"], prepared.notes[0]


# (driver CUDA nvidia-smi printed, driver version, ccs, index, torch requirement). Rows marked
# "was" changed with issue 17: the old choice modelled the CUDA toolkit, not PyTorch's matrix.
CHOICES = [
    ("13.0", "580.159.04", ["9.0"] * 8, "cu130", "torch==2.15.*"),  # H200 on a new driver
    ("12.4", None, ["9.0"], "cu126", "torch==2.14.*"),  # was cu124: cu126 runs through MVC
    ("12.8", None, ["12.0"], "cu128", "torch==2.11.*"),  # RTX 5090: 2.11 is the last cu128
    ("12.9", None, ["10.0"], "cu128", "torch==2.11.*"),  # was cu129, whose newest torch is 2.8
    ("12.2", None, ["8.0"], "cu126", "torch==2.14.*"),  # was cu121: cu126 runs through MVC
    ("11.8", None, ["8.6"], "cu118", "torch==2.7.*"),
    ("13.0", "580.65.06", ["7.0"], "cu126", "torch==2.14.*"),  # was cu130: no sm_70 there
    ("13.0", "580.65.06", ["10.3"], "cu130", "torch==2.15.*"),  # B300: sm_100 by binary compat
    ("13.0", "580.65.06", ["7.0", "7.5"], "cu126", "torch==2.14.*"),  # V100 + T4: both run
    ("11.4", "470.82.01", ["8.0"], "cu118", "torch==2.7.*"),  # was refused: MVC 11.x >= 450.80.02
    ("13.2", "595.71.05", ["12.0", "12.0"], "cu132", "torch==2.15.*"),  # RTX PRO 6000
]


@pytest.mark.parametrize(("cuda", "driver", "ccs", "tag", "torch"), CHOICES)
def test_the_torch_task_takes_the_newest_torch_that_runs_on_every_gpu(
    cuda, driver, ccs, tag, torch
):
    index, packages, why = _torch(Facts(cuda, tuple(ccs), known=True, driver_version=driver))
    assert (index, packages) == (tag, torch)
    # --show's one line: release, variant, the arch each GPU matched, the driver path.
    assert why.startswith(f"torch {torch[7:-2]} {tag}: ")
    assert re.search(r"driver path (native|mvc) \(", why)


def test_a_host_without_gpus_gets_cpu_but_a_gpu_without_cc_is_refused_never_cpu():
    assert _torch(Facts("13.0", (), known=True, driver_version="580.65.06"))[0] == "cpu"
    with pytest.raises(PrepareError, match=r"compute capability unknown for GPU 1: .*cuNNN"):
        prepare(load_tasks()["torch"], Facts("13.0", ("9.0", None), True, "580.65.06"))


def test_when_nothing_fits_the_refusal_says_the_true_reason():
    # CUDA 11.0's GA driver: below 11.x MVC (450.80.02), and every later CUDA needs more.
    with pytest.raises(PrepareError, match=r"upgrade the driver to >= 450\.80\.02"):
        prepare(load_tasks()["torch"], Facts("11.0", ("8.0",), True, "450.36.06"))
    with pytest.raises(PrepareError, match=r"has no sm_35 kernels"):
        prepare(load_tasks()["torch"], Facts("11.4", ("3.5",), True, "470.82.01"))


def test_pins_still_work_and_are_checked_against_the_facts():
    b300 = Facts("13.0", ("10.3",), True, "580.65.06")
    assert _torch(b300, torch="2.9.*")[:2] == ("cu130", "torch==2.9.*")
    assert _torch(b300, cuda="cu128")[:2] == ("cu128", "torch==2.11.*")
    v100 = Facts("13.0", ("7.0",), True, "580.65.06")
    assert _torch(v100, torch="2.9.*", cuda="cu128")[:2] == ("cu128", "torch==2.9.*")
    with pytest.raises(PrepareError, match=r"pinned cu130: torch 2\.15\+cu130 has no sm_70"):
        prepare(load_tasks({"torch": {"params": {"cuda": "cu130"}}})["torch"], v100)
    with pytest.raises(PrepareError, match=r"pinned torch 2\.11 cu128: .*no sm_70 kernels"):
        prepare(
            load_tasks({"torch": {"params": {"torch": "2.11", "cuda": "cu128"}}})["torch"], v100
        )


def test_auto_cuda_without_a_probe_says_what_to_set():
    with pytest.raises(PrepareError, match='cuda = "auto" needs the gpus probe'):
        prepare(load_tasks()["torch"])
    torch = prepare(load_tasks()["torch"], Facts("12.8", ("12.0",), known=True))
    assert "export GPUDASH_INDEX_URL=https://download.pytorch.org/whl/cu128\n" in torch.script


def test_values_only_ever_reach_the_shell_as_quoted_exports():
    nasty = '\'; rm -rf ~ # $(touch /tmp/pwned) `id` "x" \\'
    script = exports({"GPUDASH_X": nasty}) + 'printf "%s" "$GPUDASH_X"'
    out = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True)
    assert out.stdout == nasty
    assert f"export GPUDASH_X={shlex.quote(nasty)}\n" in script


def test_a_secret_is_masked_in_what_a_confirmation_shows():
    specs = load_tasks()
    prepared = prepare(specs["model"], environ={"HF_TOKEN": "hf_" + "a" * 34})
    assert "hf_aaaa" not in prepared.script
    assert prepared.shown.startswith("export HF_TOKEN=********\n")
    assert prepared.secrets_env == f"export HF_TOKEN={'hf_' + 'a' * 34}\n"


def test_carriage_return_progress_collapses_to_its_last_state_across_chunk_cuts():
    asm = LineAssembler()
    lines: list[str] = []
    partials = []
    for chunk in [b"start\n 10%\r 50", b"%\r", b"100%", b"\r\n", b"done\r\n\xe2\x82", b"\xac\n"]:
        lines += asm.feed(chunk)
        partials.append(asm.partial)
    assert lines == ["start", "100%", "done", "€"]
    assert partials[0] == " 50"


def test_escapes_are_cleaned_and_tokens_masked_in_lines():
    asm = LineAssembler(Masker(["s3cret-value"]))
    out = asm.feed(b"\x1b[31mred\x1b[0m s3cret-value hf_abcdefghijklmnopqrstuvwxyz0123\n")
    assert out == ["red ******** hf_********"]


def test_task_spec_errors_outside_a_config_list_every_problem():
    with pytest.raises(TaskSpecError) as info:
        load_tasks({"venv": {"params": {"path": "x", "pyton": "3"}}})
    assert str(info.value).splitlines() == [
        'tasks.venv.params.path: expected an absolute path or one starting with ~/, got "x"',
        'tasks.venv.params.pyton: unknown parameter for kind "venv" (takes: path, python)'
        " (did you mean 'python'?)",
    ]
