"""A GPU tool that never returns, on a real sshd host: `nvidia-smi topo -m` hangs (the fake
nvidia-smi prints the H200's captures, tests/fixtures/h200-1x, for every other command).

The other sections' findings show while the topology section waits, and when its timeout
ends it the host gets a WARN naming the hung tool, never "no GPUs in the topology"."""

from __future__ import annotations

from gpudash.config.model import Config
from gpudash.ui import create_app
from gpudash.ui.panels.findings import FindingsPanel
from tests.app.test_app import SIZE, screen_text, until
from tests.support import FIXTURES, fakegpu
from tests.support.sshd import FakeHost, Sshd

HANG_S = 3


def hang_topo(host: FakeHost) -> None:
    """nvidia-smi whose `topo -m` hangs (bounded, so nothing outlives the test for long)."""
    fakegpu.install(host.bin_dir, FIXTURES / "h200-1x")
    real = host.bin_dir / "nvidia-smi"
    real.rename(host.bin_dir / "nvidia-smi-captured")
    host.write_tool(
        "nvidia-smi",
        '#!/bin/sh\nif [ "$*" = "topo -m" ]; then sleep 20; exit 0; fi\n'
        f'exec "{host.bin_dir}/nvidia-smi-captured" "$@"\n',
    )


async def test_a_hung_topo_is_a_warning_and_other_findings_show_meanwhile(
    sshd: Sshd, fake_host: FakeHost
) -> None:
    hang_topo(fake_host)
    host = sshd.host_config(
        fake_host, network_targets=("http://127.0.0.1:9/",), section_timeout=HANG_S
    )
    app = create_app(Config(None, (host,)))
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(FindingsPanel)

        def interim() -> bool:
            """findings from the sections in, while topology still runs"""
            result = app.results["h0"]
            return (
                "topology" not in result.sections
                and result.state.value == "probing"
                and "so far:" in str(panel.border_subtitle)
                and "after the probe" not in screen_text(app)
            )

        await until(pilot, interim, timeout=HANG_S + 10)
        await until(pilot, lambda: bool(app.results["h0"].findings), timeout=HANG_S + 20)
        text = screen_text(app)
        assert f"▲ warn gpu.tool_hung  nvidia-smi topo -m hung for {HANG_S} s" in text
        (warn,) = [f for f in app.results["h0"].findings if f.code == "gpu.tool_hung"]
        assert warn.title == (
            f"nvidia-smi topo -m hung for {HANG_S} s: a driver or GPU fault is likely"
        )
        assert "nvidia-smi topo -m did not finish" in text  # the topology panel
        assert "no GPUs in the topology" not in text
        assert not any(
            f.code == "probe.section_missing" and f.facts.get("section") == "topology"
            for f in app.results["h0"].findings
        )
