"""The env section over real directory trees: venvs, dist-info names, tools on PATH."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gpudash.probe.parts import Part
from gpudash.probe.sections import env
from tests.support import FIXTURES
from tests.support.sectionrun import (
    BASIC_TOOLS,
    bin_dir,
    busybox_sh,
    run_raw,
    run_section,
    script_tool,
)
from tests.support.tools import require

FIX = FIXTURES / "sections"
VENV_PATHS = "~/.venv\n~/venv\n~/venvs/*\n/opt/*/.venv"


def make_venv(root: Path, dists: list[str], cfg: str, torch_cuda: str | None = None) -> Path:
    site = root / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(cfg)
    for dist in dists:
        (site / f"{dist}.dist-info").mkdir()
    (site / "numpy-2.3.0.dist-info").mkdir()  # not tracked: must not be reported
    if torch_cuda is not None:
        (site / "torch").mkdir()
        (site / "torch" / "version.py").write_text(
            "from typing import Optional\n__version__ = '2.11.0+cu130'\n"
            f"cuda: Optional[str] = {torch_cuda!r}\nhip: Optional[str] = None\n"
        )
    return root


def _env(home: Path, path: str | None = None, **extra: str) -> dict[str, str]:
    return {
        "PATH": path or "/usr/bin:/bin",
        "HOME": str(home),
        "GPUDASH_VENV_PATHS": VENV_PATHS,
        **extra,
    }


def test_env_on_this_machine_lists_system_python_with_its_version(tmp_path: Path) -> None:
    _, result = run_section(env, _env(tmp_path, "/usr/bin:/bin"))
    assert isinstance(result, env.Env)
    if not os.path.exists("/usr/bin/python3"):
        pytest.fail("no /usr/bin/python3: `apt-get install -y python3`", pytrace=False)
    real = os.path.realpath("/usr/bin/python3")
    py = next(p for p in result.pythons if p.realpath == real)
    said = subprocess.run(["/usr/bin/python3", "--version"], capture_output=True, text=True)
    assert f"Python {py.version}" == said.stdout.strip()
    assert len({p.realpath for p in result.pythons}) == len(result.pythons)  # one per file
    pips = list(Path("/usr/lib/python3/dist-packages").glob("pip-*.dist-info"))
    if pips:
        assert py.pip == pips[0].name[4 : -len(".dist-info")]


def test_env_reads_venv_packages_and_torch_cuda_from_dist_info_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_venv(
        home / ".venv",
        ["torch-2.11.0+cu130", "sglang-0.5.6", "flashinfer_python-0.5.3",
         "flashinfer_cubin-0.5.3", "flashinfer_jit_cache-0.5.3+cu130", "transformers-4.57.1",
         "triton-3.5.1", "pip-25.3", "sgl_kernel-0.3.17"],
        "home = /usr/bin\nimplementation = CPython\nversion_info = 3.12.3.final.0\nuv = 0.9.5\n",
    )  # fmt: skip
    make_venv(
        home / "venvs" / "vllm",
        ["torch-2.9.0", "vllm-0.11.0", "flashinfer-0.2.5"],
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
        torch_cuda="12.8",
    )
    _, result = run_section(env, _env(home, VIRTUAL_ENV=str(home / ".venv")))
    assert isinstance(result, env.Env)
    assert result.virtual_env == str(home / ".venv")
    by_path = {v.path: v for v in result.venvs}
    assert list(by_path) == [str(home / ".venv"), str(home / "venvs" / "vllm")]  # once each
    first = by_path[str(home / ".venv")]
    assert first.python == "3.12.3"
    assert first.packages == {
        "torch": "2.11.0+cu130", "sglang": "0.5.6", "flashinfer-python": "0.5.3",
        "flashinfer-cubin": "0.5.3", "flashinfer-jit-cache": "0.5.3+cu130",
        "transformers": "4.57.1", "triton": "3.5.1", "pip": "25.3", "sgl-kernel": "0.3.17",
    }  # fmt: skip
    assert first.torch_cuda == "13.0"
    second = by_path[str(home / "venvs" / "vllm")]
    assert second.packages == {"torch": "2.9.0", "vllm": "0.11.0", "flashinfer": "0.2.5"}
    assert second.torch_cuda == "12.8"  # from torch/version.py: PyPI wheels lack +cu128
    assert second.python == "3.12.3"


def test_env_reads_the_h200_venv_from_its_pip_list_as_dist_info_dirs(tmp_path: Path) -> None:
    listed = json.loads((FIX / "pip_list.txt").read_text())
    torch_version, torch_cuda = (FIX / "torch.txt").read_text().split()[:2]
    dists = [f"{d['name'].replace('-', '_')}-{d['version']}" for d in listed]
    venv = make_venv(tmp_path / "opt" / "torch" / ".venv", dists, "version = 3.12.3\n", torch_cuda)
    _, result = run_section(env, _env(tmp_path, GPUDASH_VENV_PATHS=str(tmp_path / "opt/*/.venv")))
    assert isinstance(result, env.Env)
    (found,) = result.venvs
    assert found.path == str(venv)
    assert found.packages["torch"] == "2.11.0" and torch_version.startswith("2.11.0")
    assert found.torch_cuda == torch_cuda == "13.0"
    assert found.packages["transformers"] == "5.17.0"
    assert found.packages["triton"] == "3.6.0"
    assert found.packages["pip"] == "24.0"
    assert found.packages["huggingface-hub"] == "1.33.0"
    assert found.packages["nvidia-ml-py"] == "13.610.43"
    assert "numpy" not in found.packages and "torchaudio" not in found.packages


def test_env_finds_a_conda_env_by_its_conda_meta(tmp_path: Path) -> None:
    prefix = tmp_path / "conda" / "envs" / "serve"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "conda-meta" / "python-3.11.9-h955ad1f_0.json").write_text("{}")
    (prefix / "lib" / "python3.11" / "site-packages" / "vllm-0.10.1.dist-info").mkdir(parents=True)
    _, result = run_section(env, _env(tmp_path, CONDA_PREFIX=str(prefix)))
    assert isinstance(result, env.Env)
    assert result.conda_prefix == str(prefix)
    (venv,) = result.venvs
    assert (venv.kind, venv.python, venv.packages) == ("conda", "3.11.9", {"vllm": "0.10.1"})


def test_env_reads_uv_by_running_it_and_conda_from_conda_meta_without_running_it(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "tools"
    script_tool(tools, "uv", "echo 'uv 0.9.5 (d5f3933 2025-10-21)'")
    base = tmp_path / "home" / "miniforge3"
    ran = tmp_path / "conda-ran"
    script_tool(base / "bin", "conda", f"touch {ran}; exit 99")
    (base / "conda-meta").mkdir(parents=True)
    (base / "conda-meta" / "conda-24.7.1-py312h7900ff3_0.json").write_text("{}")
    path = f"{tools}:{bin_dir(tmp_path / 'bin')}"
    _, result = run_section(env, _env(tmp_path / "home", path))
    assert isinstance(result, env.Env)
    assert result.uv == env.Tool("uv", str(tools / "uv"), "0.9.5")
    assert result.conda == (env.Tool("conda", str(base / "bin" / "conda"), "24.7.1"),)
    assert not ran.exists()


def test_env_without_any_python_or_tools_says_so(tmp_path: Path) -> None:
    _, result = run_section(env, _env(tmp_path, bin_dir(tmp_path / "bin")))
    assert isinstance(result, env.Env)
    assert result.pythons == () and result.uv is None and result.conda == ()
    assert result.venvs == ()
    assert "no python3 or python on PATH" in result.notes


def test_env_dedups_pythons_by_real_path_keeping_the_other_names(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    real = script_tool(first, "python3", "echo 'Python 3.12.3'")
    second.mkdir()
    (second / "python3").symlink_to(real)
    (second / "python").symlink_to(real)
    script_tool(second, "python3.11", "echo 'Python 3.11.9' >&2")  # py2-style: on stderr
    script_tool(second, "python3-config", "exit 1")  # not an interpreter
    path = f"{first}:{second}:{bin_dir(tmp_path / 'bin')}"
    _, result = run_section(env, _env(tmp_path, path))
    assert isinstance(result, env.Env)
    assert result.pythons == (
        env.Python(
            str(real), str(real), "3.12.3", (str(second / "python3"), str(second / "python"))
        ),
        env.Python(str(second / "python3.11"), str(second / "python3.11"), "3.11.9"),
    )


def test_env_resolves_links_to_files_and_folders_as_realpath_does_with_any_readlink(
    tmp_path: Path,
) -> None:
    real = script_tool(tmp_path / "real" / "bin", "python3", "echo 'Python 3.12.3'")
    (tmp_path / "dirlink").symlink_to(tmp_path / "real" / "bin")
    (tmp_path / "l1").mkdir()
    (tmp_path / "l1" / "python3").symlink_to("../real/bin/python3")
    (tmp_path / "l2").mkdir()
    (tmp_path / "l2" / "python").symlink_to(tmp_path / "l1" / "python3")
    dirs = f"{tmp_path / 'dirlink'}:{tmp_path / 'l1'}:{tmp_path / 'l2'}"
    # GNU readlink resolves several links in one call; busybox's takes one path at a time.
    one_at_a_time = tmp_path / "bb"
    one_at_a_time.mkdir()
    (one_at_a_time / "readlink").symlink_to(require("busybox"))
    seen = []
    for extra in ("", f"{one_at_a_time}:"):
        path = f"{extra}{dirs}:{bin_dir(tmp_path / 'bin')}"
        for shell in [("/bin/sh",), busybox_sh()]:
            _, result = run_section(env, _env(tmp_path, path), shell=shell or ())
            assert isinstance(result, env.Env)
            seen.append(result.pythons)
    aliases = (str(tmp_path / "l1" / "python3"), str(tmp_path / "l2" / "python"))
    expected = env.Python(str(tmp_path / "dirlink" / "python3"), str(real), "3.12.3", aliases)
    assert str(real) == os.path.realpath(tmp_path / "l2" / "python")
    assert seen == [(expected,)] * len(seen)


def test_env_records_what_a_broken_python_said(tmp_path: Path) -> None:
    script_tool(
        tmp_path / "shims", "python3", "echo 'pyenv: python3: command not found' >&2; exit 127"
    )
    _, result = run_section(env, _env(tmp_path, f"{tmp_path / 'shims'}:{bin_dir(tmp_path / 'b')}"))
    assert isinstance(result, env.Env)
    (py,) = result.pythons
    assert py.version is None and py.error == "pyenv: python3: command not found"


def test_a_python_printing_a_megabyte_line_does_not_scramble_the_others(tmp_path: Path) -> None:
    """The --version jobs run in parallel into one pipe: each writes one short line (an atomic
    pipe write), so the section's output stays small and no job's line can cut into another's."""
    hostile = "head -c 1048576 /dev/zero | tr '\\0' x; echo"
    script_tool(tmp_path / "a", "python3", hostile)
    for i in range(6):
        script_tool(tmp_path / f"ok{i}", "python3", f"echo 'Python 3.1{i}.1'")
    dirs = ":".join(str(tmp_path / d) for d in ["a", *(f"ok{i}" for i in range(6))])
    path = f"{dirs}:{bin_dir(tmp_path / 'bin', (*BASIC_TOOLS, 'head', 'tr'))}"
    parts, result = run_section(env, _env(tmp_path, path))
    assert sum(len(part.text) for part in parts.values()) < 20_000
    assert isinstance(result, env.Env)
    by_path = {py.path: py for py in result.pythons}
    assert by_path[str(tmp_path / "a" / "python3")].version is None
    assert len(by_path[str(tmp_path / "a" / "python3")].error or "") <= 200
    assert [by_path[str(tmp_path / f"ok{i}" / "python3")].version for i in range(6)] == [
        f"3.1{i}.1" for i in range(6)
    ]


def test_env_reads_the_same_venvs_under_busybox_sh(tmp_path: Path) -> None:
    make_venv(tmp_path / ".venv", ["torch-2.11.0+cu130", "sglang-0.5.6"], "version = 3.12.3\n")
    _, dash = run_section(env, _env(tmp_path))
    _, bb = run_section(env, _env(tmp_path), shell=busybox_sh())
    assert isinstance(dash, env.Env) and isinstance(bb, env.Env)
    assert bb.venvs == dash.venvs and bb.venvs[0].torch_cuda == "13.0"
    assert [p.realpath for p in bb.pythons] == [p.realpath for p in dash.pythons]


def test_env_never_runs_pip_or_imports_anything(tmp_path: Path) -> None:
    text, _, _ = run_raw(env, _env(tmp_path))
    assert "-m pip" not in env.BODY and "import " not in env.BODY
    assert "Traceback" not in text


def test_env_parses_the_h200_python_capture() -> None:
    lines = (FIX / "python.txt").read_text().splitlines()
    # which -a order; on Ubuntu 24.04 each of these resolves to /usr/bin/python3.12.
    names = [line for line in lines if line.startswith("/") and "/python" in line]
    real = dict.fromkeys(names, "/usr/bin/python3.12")
    version = next(line for line in lines if line.startswith("Python "))
    recs = []
    for i, path in enumerate(line for line in lines if line in real):
        recs.append(f"python\t{path}\t{real[path]}")
        if i == 0:
            recs.append(f"version\t{version}")
    pip_from = next(line for line in lines if line.startswith("pip "))
    pip_site = pip_from.split(" from ")[1].rsplit("/", 1)[0]
    pip_version = pip_from.split()[1]
    uv = next(line for line in lines if line.endswith("/uv"))
    parts = {
        "pythons": Part("pythons", 0, "\n".join(recs)),
        "pip": Part("pip", 0, f"1\t{pip_site}/pip-{pip_version}.dist-info\t-"),
        "tools": Part("tools", 0, f"tool\tuv\t{uv}\nversion\tuv 0.9.5\ntool\tconda\t"),
        "vars": Part("vars", 0, "VIRTUAL_ENV=\nCONDA_PREFIX=\nCONDA_DEFAULT_ENV="),
        "venvs": Part("venvs", 0, "venv\t/opt/torch/.venv\ncfg\tversion = 3.12.3"),
    }
    result = env.parse(parts)
    (py,) = result.pythons
    assert (py.path, py.version, len(py.aliases)) == ("/opt/torch/.venv/bin/python3", "3.12.3", 5)
    assert py.pip == "24.0"  # the venv's own pip, as `python3 -m pip` reported
    assert result.uv == env.Tool("uv", "/usr/local/bin/uv", "0.9.5")
    assert result.conda == ()
    assert result.virtual_env is None and result.conda_prefix is None
    assert result.venvs == (env.Venv("/opt/torch/.venv", "3.12.3"),)
