"""The program the verify task ships to the host (gpudash/tasks/verify/program.py).

No GPU here: what runs is what a host without torch runs (this venv has none), the pure
parts (arch coverage, the busy rule, error lines) and the program's own checks. What it
measured on a real H200 is in tests/fixtures/verify/ and tested in test_verify_checks.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpudash.tasks.verify import PROGRAM
from gpudash.tasks.verify import program as prog
from tests.support import ROOT


def run_program(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(PROGRAM), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_the_program_imports_without_torch_and_without_gpudash():
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('p', {str(PROGRAM)!r})\n"
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'gpudash')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "[]"


def test_a_python_without_torch_gives_one_fail_line_and_a_json_result(tmp_path):
    out = tmp_path / "deep" / "er" / "verify.json"  # the folder is made
    run = run_program("--out", str(out), "--expect-gpus", "8")
    assert run.returncode == 1
    assert "Traceback" not in run.stdout + run.stderr
    fail = [ln for ln in run.stdout.splitlines() if ln.startswith("verify: FAIL")]
    assert fail == [
        f"verify: FAIL: torch does not import in {sys.executable}: "
        "ModuleNotFoundError: No module named 'torch'"
    ]
    result = json.loads(out.read_text())
    assert result["status"] == "fail"
    assert result["torch"] == {
        "import_ok": False,
        "error": "ModuleNotFoundError: No module named 'torch'",
    }
    assert result["expect_gpus"] == 8
    assert "gpus" not in result  # nothing measured, nothing invented


def test_multicast_stays_off_unless_the_user_set_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in prog.MULTICAST_OFF}
    env.pop("CUDA_DEVICE_ORDER", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    run = subprocess.run(
        [sys.executable, str(PROGRAM), "--out", str(tmp_path / "a.json")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 1
    assert json.loads((tmp_path / "a.json").read_text())["env"] == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": None,
    }
    run_program("--out", str(tmp_path / "b.json"), env={"NCCL_NVLS_ENABLE": "1"})
    assert json.loads((tmp_path / "b.json").read_text())["env"]["NCCL_NVLS_ENABLE"] == "1"


def test_usage_errors_are_one_line_and_exit_2(tmp_path):
    run = run_program()
    assert run.returncode == 2
    assert run.stderr.strip() == "gpudash-verify: --out PATH is required"
    assert run_program("--out", str(tmp_path / "x"), "--expect-gpus", "many").returncode == 2


def test_an_unwritable_result_path_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    run = run_program("--out", str(blocker / "verify.json"))
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith(f"gpudash-verify: cannot write {blocker / 'verify.json'}: ")


@pytest.mark.parametrize(
    ("cc", "arch_list", "verdict", "via"),
    [
        # torch 2.11.0+cu130's list, as the real H200 printed it (tests/fixtures/verify).
        ((9, 0), ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "sass", "sm_90"),
        # cubin X.y runs on X.z, z >= y, same major: sm_100 on a B300 (10.3), sm_120 on GB10.
        ((10, 3), ["sm_90", "sm_100", "sm_120"], "compatible", "sm_100"),
        ((12, 1), ["sm_80", "sm_120"], "compatible", "sm_120"),
        # ... but not downwards, and not across majors.
        ((8, 0), ["sm_86", "sm_90"], "missing", None),
        ((10, 0), ["sm_90"], "missing", None),
        # arch-specific `a` code runs on its exact cc only; family `f` on later minors.
        ((9, 0), ["sm_90a"], "sass", "sm_90a"),
        ((10, 3), ["sm_100a"], "missing", None),
        ((10, 3), ["sm_100f"], "compatible", "sm_100f"),
        # PTX JITs forward: works, slowly at first.
        ((12, 0), ["sm_80", "sm_90", "compute_90"], "ptx", "compute_90"),
        ((9, 0), ["sm_80", "compute_100"], "missing", None),
        ((9, 0), [], "missing", None),
        ((9, 0), ["garbage", "sm_", "compute_x"], "missing", None),
    ],
)
def test_arch_coverage_follows_cuda_binary_compatibility(cc, arch_list, verdict, via):
    assert prog.arch_coverage(cc, arch_list) == (verdict, via)


def test_a_gpu_is_busy_past_1_gib_by_process_list_or_used_memory():
    # Values as nvidia-smi printed them on the real H200 while a second process held 2 GiB
    # (tests/fixtures/verify/device.log): the process list and memory.used agree.
    uuid = "GPU-d12fa503-4df8-598e-d57a-4c322009d0a9"
    gpu = {"index": 0, "uuid": uuid, "memory_used_mib": 2575}
    held = {"gpus": [gpu], "apps": [{"uuid": uuid, "pid": 574, "mib": 2566}]}
    assert prog.busy_gpus(held) == {0: 2575}
    # In a container the process list can be empty while the memory is taken.
    assert prog.busy_gpus({"gpus": [gpu], "apps": []}) == {0: 2575}
    idle = {**gpu, "memory_used_mib": 0}
    assert prog.busy_gpus({"gpus": [idle], "apps": []}) == {}
    assert prog.busy_gpus({"gpus": [{**gpu, "memory_used_mib": 1024}], "apps": None}) == {}
    assert prog.busy_gpus({"gpus": [], "apps": None}) == {}


def test_the_real_error_line_is_taken_from_a_traceback():
    # A real traceback, from a real python: the frames are not the error.
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "def load():\n"
            "    raise ImportError('/v/flashinfer/_kernels.so: undefined symbol: "
            "_ZN3c1021throwNullDataPtrErrorEv')\n"
            "load()\n",
        ],
        capture_output=True,
        text=True,
    )
    assert run.stderr.startswith("Traceback")
    assert prog.first_error_in(run.stderr) == (
        "ImportError: /v/flashinfer/_kernels.so: undefined symbol: _ZN3c1021throwNullDataPtrErrorEv"
    )
    assert prog.first_error_in("Segmentation fault (core dumped)\n") == (
        "Segmentation fault (core dumped)"
    )
    assert prog.first_error_in("") is None
    assert prog.error_line(RuntimeError("CUDA error: no kernel image\nmore\n")) == (
        "RuntimeError: CUDA error: no kernel image"
    )
    assert prog.error_line(ValueError()) == "ValueError"
    assert len(prog.error_line(RuntimeError("x" * 5000))) == 300


def test_the_program_passes_the_projects_ruff():
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", str(PROGRAM)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_program_parses_as_python_3_9_for_older_serving_venvs():
    import ast

    ast.parse(PROGRAM.read_text(), feature_version=(3, 9))


def test_the_programs_arch_rule_agrees_with_the_stack_truth_facts():
    # The program carries its own copy (it runs on the host without gpudash): it must judge
    # every target as gpudash.checks.facts.binary_compat does.
    from gpudash.checks.facts.binary_compat import Target, ptx_runs, sass_runs

    ccs = [(7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (12, 0), (12, 1)]
    for major, minor in ccs:
        for suffix in ("", "a", "f"):
            target = Target((major, minor), suffix, ptx=False)
            for cc in ccs:
                verdict, _ = prog.arch_coverage(cc, [f"sm_{major}{minor}{suffix}"])
                assert (verdict in ("sass", "compatible")) == sass_runs(target, cc), (target, cc)
            ptx = Target((major, minor), "", ptx=True)
            for cc in ccs:
                verdict, _ = prog.arch_coverage(cc, [f"compute_{major}{minor}"])
                assert (verdict == "ptx") == ptx_runs(ptx, cc), (ptx, cc)
