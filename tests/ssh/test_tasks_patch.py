"""The patch task end to end: `git apply` of local .patch files to a package inside a real uv
venv on a host over the real test sshd.

What a user relies on: the patch lands in the installed package (found by importing it with
the venv's Python), a second run sees it applied and skips it, and a patch that does not fit
fails the task by name, leaving the package as it was.
"""

from __future__ import annotations

from pathlib import Path

from gpudash.tasks.events import TaskEvent, TaskFinished, TaskOutput
from gpudash.tasks.fleet_run import run_on_host
from gpudash.tasks.spec import load_tasks
from gpudash.transport.ssh import SshPool
from tests.support.sshd import FakeHost, Sshd
from tests.support.wheels import LOCAL_PYTHON, make_wheel, uv_path

ORIGINAL = "def batch_size():\n    return 8\n"
FIX = """\
--- a/gpudash_served/__init__.py
+++ b/gpudash_served/__init__.py
@@ -1,2 +1,2 @@
 def batch_size():
-    return 8
+    return 64
"""
STALE = FIX.replace("return 8", "return 16")  # written against another version


async def _run(sshd: Sshd, host: FakeHost, pool: SshPool, wheels: Path, patches: list[Path]):
    specs = load_tasks(
        {
            "venv": {
                "params": {"path": "~/venvs/p", "python": ""},
                "env": LOCAL_PYTHON,
            },
            "served": {
                "title": "install the package to patch",
                "kind": "pip",
                "needs": ["venv"],
                "params": {
                    "venv": "~/venvs/p",
                    "packages": ["gpudash-served==1.0"],
                    "find_links": str(wheels),
                    "no_index": True,
                },
                "env": {"UV_OFFLINE": "1"},
            },
            "fix": {
                "title": "patch the package",
                "kind": "patch",
                "needs": ["served"],
                "params": {
                    "venv": "~/venvs/p",
                    "module": "gpudash_served",
                    "patches": [str(p) for p in patches],
                },
            },
        }
    )
    config = sshd.host_config(host)
    events: list[TaskEvent] = [
        e async for e in run_on_host(config, pool.transport(config), specs, ["fix"])
    ]
    (end,) = [e for e in events if isinstance(e, TaskFinished) and e.task == "fix"]
    lines = [line for e in events if isinstance(e, TaskOutput) for line in e.lines]
    return end, lines


def _installed(host: FakeHost) -> str:
    (found,) = (host.home / "venvs" / "p").glob("lib/python*/site-packages/gpudash_served")
    return (found / "__init__.py").read_text()


def _setup(tmp_path: Path, host: FakeHost) -> Path:
    (host.bin_dir / "uv").symlink_to(uv_path())
    wheel = make_wheel(
        tmp_path / "wheels", "gpudash-served", "1.0", {"gpudash_served/__init__.py": ORIGINAL}
    )
    return wheel.parent


async def test_a_patch_lands_in_the_installed_package_once(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
) -> None:
    wheels = _setup(tmp_path, fake_host)
    fix = tmp_path / "bigger-batches.patch"
    fix.write_text(FIX)
    end, lines = await _run(sshd, fake_host, ssh_pool, wheels, [fix])
    assert end.rc == 0, lines
    assert "00-bigger-batches.patch: applied" in lines
    assert _installed(fake_host) == ORIGINAL.replace("8", "64")

    end, lines = await _run(sshd, fake_host, ssh_pool, wheels, [fix])
    assert end.rc == 0, lines
    assert "00-bigger-batches.patch: already applied, skipped" in lines
    assert _installed(fake_host) == ORIGINAL.replace("8", "64")


async def test_a_patch_that_does_not_fit_fails_the_task_and_changes_nothing(
    sshd: Sshd, fake_host: FakeHost, ssh_pool: SshPool, tmp_path: Path
) -> None:
    wheels = _setup(tmp_path, fake_host)
    stale = tmp_path / "stale.patch"
    stale.write_text(STALE)
    end, lines = await _run(sshd, fake_host, ssh_pool, wheels, [stale])
    assert end.rc == 1, lines
    assert "00-stale.patch: does not apply" in lines
    assert _installed(fake_host) == ORIGINAL
