"""The torch and serving tasks end to end, as a user runs them on fresh GPU hosts.

The hosts are fakes whose nvidia-smi prints real captures (an H200: driver CUDA 13.0, cc 9.0;
a V100 and a B300: tests/fixtures/public/SOURCES.md) over the real test sshd; uv is real; the
PyTorch and PyPI indexes are real HTTP servers on loopback (support/wheels.py) holding wheels
made here, one `torch` per CUDA tag at the newest release PyTorch published for that tag.
What is checked is what the user relies on: the probe's facts pick the index PyTorch's build
matrix says runs on the GPU under its driver (cu130 for the H200, cu126 for the V100 whose
sm_70 the cu13x wheels lack, cu132 for the B300 through sm_100 binary compatibility), uv
installs from that index only, the task's check then passes (a second run is skipped), and
gpudash's own probe of the host shows the venv with that torch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gpudash.host_probe import probe_host
from gpudash.model import HostResult, apply
from gpudash.probe.registry import section
from gpudash.probe.sections.env import Venv
from gpudash.tasks.events import TaskEvent, TaskFinished, TaskOutput, TaskSkipped
from gpudash.tasks.fleet_run import run_on_host
from gpudash.tasks.spec import TaskSpec, load_tasks
from gpudash.transport.ssh import SshPool
from tests.support import FIXTURES, fakegpu
from tests.support.sshd import FakeHost, Sshd
from tests.support.wheels import LOCAL_PYTHON, LoopbackIndex, loopback_index, make_wheel, uv_path

H200 = FIXTURES / "h200-1x"
PUBLIC = FIXTURES / "public"
# (tag, torch.version.cuda, the newest release with that variant in gpudash's facts)
INDEXES = (
    ("cu126", "12.6", "2.14.0"),
    ("cu128", "12.8", "2.11.0"),
    ("cu130", "13.0", "2.15.0"),
    ("cu132", "13.2", "2.15.0"),
)


def _torch(where: Path, tag: str, cuda: str, release: str) -> Path:
    """A `torch` whose `torch.version.cuda` says which CUDA it was built for, as the real
    one does (the task's check and the env probe both read it)."""
    version = f"{release}+{tag}"
    return make_wheel(
        where / tag,
        "torch",
        version,
        {
            "torch/__init__.py": "from torch import version\n__version__ = version.__version__\n",
            "torch/version.py": f"__version__ = {version!r}\ncuda = {cuda!r}\n",
        },
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LoopbackIndex]:
    with loopback_index(tmp_path / "index") as served:
        for tag, cuda, release in INDEXES:
            served.publish(f"whl/{tag}", _torch(tmp_path / "built", tag, cuda, release))
        sglang = make_wheel(
            tmp_path / "built",
            "sglang",
            "0.5.6",
            {"sglang/__init__.py": "__version__ = '0.5.6'\n"},
            extras=("all",),
        )
        served.publish("simple", sglang)
        yield served


@pytest.fixture
def h200(fake_host: FakeHost) -> FakeHost:
    fakegpu.install(fake_host.bin_dir, H200)
    (fake_host.bin_dir / "uv").symlink_to(uv_path())
    return fake_host


def _specs(index: LoopbackIndex) -> Mapping[str, TaskSpec]:
    """The built-in tasks as a user's config would point them elsewhere: only the index URLs
    (and the venv's Python, which uv must not download) differ from the defaults."""
    return load_tasks(
        {
            "venv": {"params": {"python": ""}, "env": LOCAL_PYTHON},
            "torch": {"params": {"index": index.url("whl")}},
            "serving": {"env": {"UV_INDEX_URL": index.url("simple")}},
        }
    )


async def _run(
    sshd: Sshd, host: FakeHost, pool: SshPool, specs: Mapping[str, TaskSpec], task: str
) -> list[TaskEvent]:
    config = sshd.host_config(host)
    stream = run_on_host(config, pool.transport(config), specs, [task])
    return [event async for event in stream]


def _ends(events: list[TaskEvent]) -> dict[str, TaskEvent]:
    return {e.task: e for e in events if isinstance(e, (TaskFinished, TaskSkipped))}


def _lines(events: list[TaskEvent]) -> list[str]:
    return [line for e in events if isinstance(e, TaskOutput) for line in e.lines]


async def _serve_venv(sshd: Sshd, host: FakeHost, pool: SshPool) -> Venv:
    """~/venvs/serve as gpudash's env probe of the host sees it."""
    config = sshd.host_config(host)
    result = HostResult(config.name)
    async for event in probe_host(config, pool.transport(config), [section("env")]):
        result = apply(result, event)
    return {v.path: v for v in result.data("env").venvs}[f"{host.home}/venvs/serve"]


def _served(index: LoopbackIndex, task_lines: list[str]) -> str:
    return f"requests: {index.requests}\n" + "\n".join(task_lines[-30:])


async def test_torch_task_installs_the_wheels_for_the_drivers_cuda_from_the_pytorch_index(
    sshd: Sshd, h200: FakeHost, ssh_pool: SshPool, index: LoopbackIndex
) -> None:
    specs = _specs(index)
    events = await _run(sshd, h200, ssh_pool, specs, "torch")
    ends, lines = _ends(events), _lines(events)
    assert isinstance(ends["uv"], TaskSkipped)  # uv is on the host's PATH
    assert isinstance(ends["venv"], TaskFinished) and ends["venv"].rc == 0, lines
    assert isinstance(ends["torch"], TaskFinished) and ends["torch"].rc == 0, _served(index, lines)
    assert ends["torch"].affects == ("env",)
    # The probe's facts (driver CUDA 13.0, cc 9.0) chose cu130, and uv asked that index only.
    assert any(f"--index-url {index.url('whl/cu130')}" in line for line in lines), lines
    assert "/whl/cu130/torch/" in index.requests
    assert not any(t in path for path in index.requests for t in ("cu126", "cu128", "cu132"))

    serve = await _serve_venv(sshd, h200, ssh_pool)
    assert serve.packages["torch"] == "2.15.0+cu130"
    assert serve.torch_cuda == "13.0"

    again = _ends(await _run(sshd, h200, ssh_pool, specs, "torch"))
    assert isinstance(again["torch"], TaskSkipped)  # its check: torch built for cu130 is there


async def test_serving_task_installs_sglang_after_torch_into_the_same_venv(
    sshd: Sshd, h200: FakeHost, ssh_pool: SshPool, index: LoopbackIndex
) -> None:
    specs = _specs(index)
    events = await _run(sshd, h200, ssh_pool, specs, "serving")
    ends, lines = _ends(events), _lines(events)
    assert [t for t in ("uv", "venv", "torch", "serving") if t in ends] == [
        "uv",
        "venv",
        "torch",
        "serving",
    ]
    assert isinstance(ends["serving"], TaskFinished) and ends["serving"].rc == 0, _served(
        index, lines
    )
    installs = [line for line in lines if line.startswith("+ uv pip install")]
    assert len(installs) == 2 and installs[1].endswith("--torch-backend cu130"), installs
    assert " + sglang==0.5.6" in lines
    assert "/simple/sglang/" in index.requests

    serve = await _serve_venv(sshd, h200, ssh_pool)
    assert serve.packages["sglang"] == "0.5.6" and serve.torch_cuda == "13.0"

    again = _ends(await _run(sshd, h200, ssh_pool, specs, "serving"))
    assert isinstance(again["serving"], TaskSkipped)  # `import sglang` works in the venv


@pytest.mark.parametrize(
    ("captures", "tag", "installed"),
    [
        # V100 (sm_70) on driver 580 / CUDA 13.0: the cu13x wheels start at sm_75, and 2.11
        # dropped Volta from cu128; 2.14 cu126 still has sm_70 SASS.
        (
            {"query_csv.txt": PUBLIC / "query-v100-name-cc.txt", "smi.txt": H200 / "smi.txt"},
            "cu126",
            "2.14.0+cu126",
        ),
        # B300 (cc 10.3) on driver 610.57.04: sm_100 SASS runs on 10.3 (binary compatibility),
        # and the driver runs CUDA 13.2 natively.
        ({"query_csv.txt": PUBLIC / "query-b300-7x-610-name-cc.txt"}, "cu132", "2.15.0+cu132"),
    ],
    ids=["v100", "b300"],
)
async def test_the_torch_task_picks_the_index_pytorchs_matrix_says_runs_on_the_gpu(
    sshd: Sshd,
    fake_host: FakeHost,
    ssh_pool: SshPool,
    index: LoopbackIndex,
    captures: dict[str, Path],
    tag: str,
    installed: str,
) -> None:
    fakegpu.install(fake_host.bin_dir, captures)
    (fake_host.bin_dir / "uv").symlink_to(uv_path())
    specs = _specs(index)
    events = await _run(sshd, fake_host, ssh_pool, specs, "torch")
    ends, lines = _ends(events), _lines(events)
    assert isinstance(ends["torch"], TaskFinished) and ends["torch"].rc == 0, _served(index, lines)
    assert any(f"--index-url {index.url('whl/' + tag)}" in line for line in lines), lines
    assert [p for p in index.requests if p.startswith("/whl/")] and all(
        p.startswith(f"/whl/{tag}/") for p in index.requests if p.startswith("/whl/")
    ), index.requests
    serve = await _serve_venv(sshd, fake_host, ssh_pool)
    assert serve.packages["torch"] == installed
