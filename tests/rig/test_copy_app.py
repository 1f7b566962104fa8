"""The app's copy on marked hosts is the CLI's fan-out: marking h1, h2 and h3 and pressing the
copy key feeds one chain from h0 (the source sends the bytes once), and every marked host
ends verified with its own run in the Runs table. Namespaced hosts (tests/support/netrig.py):
run only under `flock /tmp/gpudash-rig.lock`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudash.config.load import load_config
from gpudash.ui import create_app
from gpudash.ui.screens.confirm import ConfirmTask
from gpudash.ui.screens.tasks import TasksScreen
from tests.app.test_app import settled, until
from tests.rig.test_copy_direct import copy_config, make_tree, no_key_left
from tests.support.cli import tree_of
from tests.support.netrig import NetRig

SIZE = (120, 36)


@pytest.fixture
def rig4(netrig: NetRig) -> NetRig:
    if netrig.mode != "netns":
        pytest.fail(f"a fan-out needs hosts that reach each other: {netrig.fallback}")
    make_tree(netrig.hosts[0].home / "src", big=8 * 1024 * 1024, small=50)
    return netrig


async def test_marked_hosts_get_one_chain_and_each_ends_verified(rig4: NetRig, tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text(copy_config(rig4))
    app = create_app(load_config(str(path)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, settled(app), timeout=30)
        for name in ("h1", "h2", "h3"):
            app.select_host(name)
            await pilot.press("space")
        await until(pilot, lambda: app.marked == {"h1", "h2", "h3"})
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await pilot.press("C")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTask))
        await pilot.press("y")

        def ended() -> bool:
            """every marked host's copy ended"""
            runs = [app.tasks.runs.get((h, "copy")) for h in ("h1", "h2", "h3")]
            return all(r is not None and not r.active for r in runs)

        await until(pilot, ended, timeout=180)
        runs = {h: app.tasks.runs[(h, "copy")] for h in ("h1", "h2", "h3")}
        logs = {h: "\n".join(r.lines) for h, r in runs.items()}
        assert {h: r.state for h, r in runs.items()} == dict.fromkeys(runs, "ok"), logs
        # one chain, fed once by the source; each host's own run then found nothing missing
        assert any("chain: this host -> h1 -> h2 -> h3" in log for log in logs.values()), logs
        for host, log in logs.items():
            assert "every file is there; verifying" in log, (host, log)
    src = tree_of(rig4.hosts[0].home / "src")
    for host in rig4.hosts[1:]:
        assert tree_of(host.home / "dst") == src, host.name
    no_key_left(rig4)
