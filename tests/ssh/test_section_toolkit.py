"""The toolkit section: every nvcc once, CUDA installs, the driver, NCCL and cuDNN."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from gpudash.probe.parts import Part
from gpudash.probe.sections import toolkit
from tests.support import FIXTURES
from tests.support.sectionrun import bin_dir, busybox_sh, run_section, script_tool

FIX = FIXTURES / "sections"
NVCC_TEXT = (FIX / "nvcc.txt").read_text()


def _env(home: Path, path: str, **extra: str) -> dict[str, str]:
    return {"PATH": path, "HOME": str(home), "GPUDASH_VENV_PATHS": "~/.venv", **extra}


def _fake_nvcc(where: Path) -> Path:
    return script_tool(where, "nvcc", f"cat <<'EOF'\n{NVCC_TEXT}EOF")


def test_toolkit_on_this_machine_reports_what_is_there(tmp_path: Path) -> None:
    _, result = run_section(toolkit, _env(tmp_path, os.environ["PATH"]))
    assert isinstance(result, toolkit.Toolkit)
    installs = sorted(
        d for d in glob.glob("/usr/local/cuda*") if os.path.isdir(d) and not os.path.islink(d)
    )
    assert sorted(i.path for i in result.cuda_installs) == installs
    if os.path.islink("/usr/local/cuda"):
        assert result.cuda_symlink == os.path.realpath("/usr/local/cuda")
    reals = [n.realpath for n in result.nvcc]
    assert len(reals) == len(set(reals))
    if not os.path.exists("/proc/driver/nvidia/version"):
        assert result.driver_version is None
        assert any(n.startswith("driver version:") for n in result.notes)


def test_toolkit_lists_each_nvcc_once_by_real_path_with_its_version(tmp_path: Path) -> None:
    real = _fake_nvcc(tmp_path / "cuda-13.0" / "bin")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "nvcc").symlink_to(real)
    script_tool(tmp_path / "wrap", "nvcc", 'exec /nonexistent/cuda/bin/nvcc "$@"')
    path = f"{tmp_path / 'links'}:{real.parent}:{tmp_path / 'wrap'}:{bin_dir(tmp_path / 'b')}"
    _, result = run_section(toolkit, _env(tmp_path, path))
    assert isinstance(result, toolkit.Toolkit)
    mine = [n for n in result.nvcc if n.path.startswith(str(tmp_path))]
    assert mine[0] == toolkit.Nvcc(
        path=str(tmp_path / "links" / "nvcc"),
        release="13.0",
        version="13.0.88",
        build="cuda_13.0.r13.0/compiler.36424714_0",
        realpath=str(real),
        aliases=(str(real),),
    )
    assert mine[1].path == str(tmp_path / "wrap" / "nvcc")
    assert mine[1].release is None and "not found" in (mine[1].error or "")
    assert len(mine) == 2


def test_toolkit_reads_nccl_and_cudnn_wheels_in_venvs_by_dist_info_name(tmp_path: Path) -> None:
    site = tmp_path / ".venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("version = 3.12.3\n")
    (site / "nvidia_nccl_cu13-2.28.9.dist-info").mkdir()
    (site / "nvidia_cudnn_cu13-9.19.0.56.dist-info").mkdir()
    _, result = run_section(toolkit, _env(tmp_path, bin_dir(tmp_path / "b")))
    assert isinstance(result, toolkit.Toolkit)
    wheel_nccl = [lib for lib in result.nccl if lib.source == "wheel"]
    wheel_cudnn = [lib for lib in result.cudnn if lib.source == "wheel"]
    assert wheel_nccl == [
        toolkit.Lib(
            "nvidia-nccl-cu13", "2.28.9", "wheel", str(site / "nvidia_nccl_cu13-2.28.9.dist-info")
        )
    ]
    assert [(lib.name, lib.version) for lib in wheel_cudnn] == [("nvidia-cudnn-cu13", "9.19.0.56")]


def test_toolkit_reads_nccl_and_cudnn_from_the_ldconfig_cache_once_by_real_file(
    tmp_path: Path,
) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "libnccl.so.2.27.3").write_bytes(b"")
    (libs / "libnccl.so.2").symlink_to("libnccl.so.2.27.3")
    (libs / "libcudnn.so.9.1.0").write_bytes(b"")
    (libs / "libcudnn.so.9").symlink_to("libcudnn.so.9.1.0")
    cache = (
        "4 libs found in cache `/etc/ld.so.cache'\n"
        f"\tlibnccl.so.2 (libc6,x86-64) => {libs}/libnccl.so.2\n"
        f"\tlibnccl.so.2 (libc6) => {libs}/libnccl.so.2.27.3\n"
        f"\tlibcudnn.so.9 (libc6,x86-64) => {libs}/libcudnn.so.9\n"
        "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"
    )
    script_tool(tmp_path / "sbin", "ldconfig", f"cat <<'EOF'\n{cache}EOF")
    env = _env(tmp_path, f"{tmp_path / 'sbin'}:{bin_dir(tmp_path / 'b')}")
    for shell in [("/bin/sh",), busybox_sh()]:
        _, result = run_section(toolkit, env, shell=shell or ())
        assert isinstance(result, toolkit.Toolkit)
        found = [lib for lib in (*result.nccl, *result.cudnn) if str(libs) in lib.path]
        assert found == [  # named by the file the links end at, each once
            toolkit.Lib("libnccl.so.2.27.3", "2.27.3", "library", str(libs / "libnccl.so.2.27.3")),
            toolkit.Lib("libcudnn.so.9.1.0", "9.1.0", "library", str(libs / "libcudnn.so.9.1.0")),
        ]


def test_toolkit_without_ldconfig_or_nvcc_on_path_still_answers(tmp_path: Path) -> None:
    _, result = run_section(toolkit, _env(tmp_path, bin_dir(tmp_path / "b")))
    assert isinstance(result, toolkit.Toolkit)
    assert all(n.path.startswith("/usr/local/cuda") for n in result.nvcc)


def test_toolkit_reads_the_same_under_busybox_sh(tmp_path: Path) -> None:
    _fake_nvcc(tmp_path / "bin")
    env = _env(tmp_path, f"{tmp_path / 'bin'}:/usr/bin:/bin")
    _, dash = run_section(toolkit, env)
    _, bb = run_section(toolkit, env, shell=busybox_sh())
    assert bb == dash


def test_toolkit_parses_the_h200_captures() -> None:
    which = (FIX / "nvcc_which.txt").read_text().splitlines()
    # which -a nvcc; ls -d /usr/local/cuda*; readlink -f /usr/local/cuda
    nvcc_path, cuda_dirs, target = which[0], which[1:4], which[4]
    cuda = [f"link\t/usr/local/cuda\t{target}", f"link\t/usr/local/cuda-13\t{target}"]
    cuda += [f"install\t{target}", "nvcc\t1"]
    assert set(cuda_dirs) == {"/usr/local/cuda", "/usr/local/cuda-13", target}
    nccl = (FIX / "nccl.txt").read_text().splitlines()
    # ldconfig -p paths and the ls of /usr/lib/x86_64-linux-gnu all resolve (usrmerge, soname
    # links) to one file; the body prints the first path with that real path.
    candidates = [line.split("=> ")[-1].strip() for line in nccl if "libnccl.so." in line]
    real = next(c for c in candidates if c.endswith(".so.2.28.3"))
    libs = [f"lib\t{candidates[0]}\t{real}"]
    version = next(line.split()[1] for line in nccl if line.startswith("Version:"))
    site = "/opt/torch/.venv/lib/python3.12/site-packages"
    libs.append(f"wheel\t{site}/nvidia_nccl_cu13-{version}.dist-info")
    parts = {
        "nvccs": Part("nvccs", 0, f"1\t{nvcc_path}\t/usr/local/cuda-13.0/bin/nvcc"),
        "nvcc.1": Part("nvcc.1", 0, f"{nvcc_path}\t/usr/local/cuda-13.0/bin/nvcc\n{NVCC_TEXT}"),
        "cuda": Part("cuda", 0, "\n".join(cuda)),
        "driver": Part(
            "driver",
            0,
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build"
            "  (dvs-builder@U22-I3-AE18-09-3)  Thu Oct  2 23:27:41 UTC 2025\n"
            "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)",
        ),
        "libs": Part("libs", 0, "\n".join(libs)),
    }
    result = toolkit.parse(parts)
    (nvcc,) = result.nvcc
    assert (nvcc.path, nvcc.release, nvcc.version) == (
        "/usr/local/cuda/bin/nvcc",
        "13.0",
        "13.0.88",
    )
    assert result.cuda_installs == (
        toolkit.CudaInstall(
            target, "13.0", "name", True, ("/usr/local/cuda", "/usr/local/cuda-13")
        ),
    )
    assert result.cuda_symlink == "/usr/local/cuda-13.0"
    assert result.driver_version == "580.159.04"
    assert [(lib.name, lib.version, lib.source) for lib in result.nccl] == [
        ("libnccl.so.2.28.3", "2.28.3", "library"),
        ("nvidia-nccl-cu13", "2.28.9", "wheel"),
    ]
    assert result.notes == ()


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024",
         "535.183.01"),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build",
         "570.124.06"),
        ("module 580.159.04", "580.159.04"),
        ("nvidia kernel module: not loaded", None),
        ("", None),
    ],
)  # fmt: skip
def test_toolkit_reads_the_driver_version_from_the_kernel_module(
    text: str, version: str | None
) -> None:
    assert toolkit.parse({"driver": Part("driver", 0, text)}).driver_version == version


def test_toolkit_reads_cuda_versions_from_version_json_txt_and_headers() -> None:
    cuda = "install\t/usr/local/cuda-12.8\njson\t12.8.1\ninstall\t/usr/local/cuda-11.8\n"
    cuda += "txt\tCUDA Version 11.8.89\ninstall\t/usr/local/cuda-x\n"
    libs = "header\t/usr/include/cudnn_version.h\ndefine\t#define CUDNN_MAJOR 9\n"
    libs += "define\t#define CUDNN_MINOR 10\ndefine\t#define CUDNN_PATCHLEVEL 2\n"
    libs += "lib\t/usr/lib/x86_64-linux-gnu/libcudnn.so.9\t/usr/lib/libcudnn.so.9.10.2\n"
    result = toolkit.parse({"cuda": Part("cuda", 0, cuda), "libs": Part("libs", 0, libs)})
    assert [(i.path, i.version, i.version_source) for i in result.cuda_installs] == [
        ("/usr/local/cuda-12.8", "12.8.1", "version.json"),
        ("/usr/local/cuda-11.8", "11.8.89", "version.txt"),
        ("/usr/local/cuda-x", None, None),
    ]
    assert [(lib.name, lib.version, lib.source) for lib in result.cudnn] == [
        ("libcudnn.so.9.10.2", "9.10.2", "library"),
        ("cudnn_version.h", "9.10.2", "header"),
    ]
