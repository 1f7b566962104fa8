"""The local transport on this machine (no GPU): every section reports what it found."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from gpudash.config.load import parse_config
from gpudash.fleet import Fleet
from gpudash.model import HostResult, HostState, apply
from gpudash.probe.registry import SECTION_NAMES


@pytest.fixture
def http_target() -> Iterator[str]:
    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        do_HEAD = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


async def probe_local(target: str, nvml: bool) -> HostResult:
    config = parse_config(
        f'[hosts.here]\ntransport = "local"\nnetwork_targets = ["{target}"]\n', "test.toml"
    )
    snap = HostResult("here")
    async with Fleet(config) as fleet:
        transport = fleet.transport(config.hosts[0])
        transport.use_nvml = nvml  # type: ignore[attr-defined]
        async for event in fleet.probe():
            snap = apply(snap, event)
    return snap


@pytest.mark.parametrize("nvml", [True, False], ids=["nvml", "nvidia-smi"])
async def test_every_section_reports_what_it_found_on_a_machine_without_gpus(
    http_target: str, nvml: bool
):
    snap = await probe_local(http_target, nvml)
    assert snap.state is HostState.READY
    assert tuple(snap.sections) != () and set(snap.sections) == set(SECTION_NAMES)
    for name, section in snap.sections.items():
        assert section.error is None, (name, section.error)
        assert section.data is not None, name
    gpus = snap.data("gpus")
    assert gpus.gpus == () and gpus.missing  # "nvidia-smi: not found" or NVML's reason
    assert snap.data("system").cpus >= 1
    (target,) = snap.data("network").targets
    assert target.ok and target.http_status == 200
