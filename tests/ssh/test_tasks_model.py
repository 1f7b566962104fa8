"""The model task end to end: the real `hf` CLI on a host over the real test sshd, downloading
from a Hub served on loopback (tests/support/fakehub.py).

What a user relies on: the weights land in the models dir under the repo's name and
gpudash's probe then shows the model whole; the HF token reaches the Hub and never the log;
a repo bigger than the free space is refused before a byte is fetched.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpudash.host_probe import probe_host
from gpudash.model import HostResult, apply
from gpudash.probe.registry import section
from gpudash.tasks.events import TaskEvent, TaskFinished, TaskOutput
from gpudash.tasks.fleet_run import run_on_host
from gpudash.tasks.spec import load_tasks
from gpudash.transport.ssh import SshPool
from tests.support.fakehub import fake_hub
from tests.support.sshd import FakeHost, Sshd

REPO = "acme/tiny-model"
FILES = {
    "config.json": b'{"model_type": "llama"}\n',
    "model.safetensors": bytes(range(256)) * 64,
}
TOKEN = "hf_plantedTOKENforTheModelTask0123"


def _hf(host: FakeHost) -> None:
    """The `hf` the test extras installed (huggingface_hub), on the host's PATH."""
    (host.bin_dir / "hf").symlink_to(Path(sys.executable).with_name("hf"))


async def _run(
    sshd: Sshd, host: FakeHost, pool: SshPool, hub_url: str, environ: dict[str, str]
) -> list[TaskEvent]:
    specs = load_tasks(
        {
            "model": {
                "params": {"repo": REPO, "dir": "~/models"},
                "env": {"HF_ENDPOINT": hub_url, "HF_HUB_DISABLE_TELEMETRY": "1"},
            }
        }
    )
    config = sshd.host_config(host)
    stream = run_on_host(config, pool.transport(config), specs, ["model"], environ=environ)
    return [event async for event in stream]


def _lines(events: list[TaskEvent]) -> list[str]:
    return [line for e in events if isinstance(e, TaskOutput) for line in e.lines]


def _end(events: list[TaskEvent]) -> TaskFinished:
    (end,) = [e for e in events if isinstance(e, TaskFinished)]
    return end


async def test_the_model_lands_in_the_models_dir_and_the_probe_shows_it_whole(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
) -> None:
    _hf(fake_host)
    with fake_hub(REPO, FILES) as hub:
        events = await _run(sshd, fake_host, ssh_pool, hub.url, {"HF_TOKEN": TOKEN})
    lines = _lines(events)
    end = _end(events)
    assert end.rc == 0, lines
    assert end.affects == ("models",)
    dest = fake_host.home / "models" / REPO
    for name, data in FILES.items():
        assert (dest / name).read_bytes() == data
    assert f"repo size {sum(map(len, FILES.values()))} bytes" in " ".join(lines)

    # The token went to the Hub as the client sends it, and nowhere a user can read.
    assert any(auth == f"Bearer {TOKEN}" for _, _, auth in hub.requests), hub.requests
    assert not any(TOKEN in line for line in lines)

    config = sshd.host_config(fake_host)
    result = HostResult(config.name)
    async for event in probe_host(config, ssh_pool.transport(config), [section("models")]):
        result = apply(result, event)
    models = {m.name: m for d in result.data("models").dirs for m in d.models}
    assert models[REPO].complete and models[REPO].has_config and models[REPO].has_weights


async def test_a_repo_bigger_than_the_free_space_is_refused_before_downloading(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool
) -> None:
    _hf(fake_host)
    huge = {"model.safetensors": 1 << 60}  # an exabyte: no test machine has that free
    with fake_hub(REPO, FILES, claimed_sizes=huge) as hub:
        events = await _run(sshd, fake_host, ssh_pool, hub.url, {})
    lines = _lines(events)
    assert _end(events).rc == 1, lines
    assert any(line.startswith("gpudash: not enough space in") for line in lines), lines
    assert not [path for _, path, _ in hub.requests if "/resolve/" in path]
    assert not (fake_host.home / "models" / REPO / "model.safetensors").exists()
