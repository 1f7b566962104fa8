"""A task key must not shadow a key the tasks screen already answers: the config says which
key, where, and what it does already (gpudash/config/keys.py)."""

from __future__ import annotations

import pytest

from gpudash.config.keys import ALWAYS_KEYS, TASK_SCREEN_KEYS, key_name
from gpudash.config.load import parse_config
from gpudash.config.model import ConfigError
from tests.support import FIXTURES

HOST = '[hosts.a]\naddress = "127.0.0.1"\n'


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "gpudash.toml")
    return str(caught.value).splitlines()


def task(name: str, key: str) -> str:
    return f'[tasks.{name}]\ntitle = "t"\nkind = "script"\nrun = "true"\nkey = "{key}"\n'


def test_a_task_key_equal_to_the_cancel_key_is_an_error_naming_the_key_and_line() -> None:
    lines = problems(HOST + task("foo", "x"))
    assert lines == [
        'gpudash.toml:7: tasks.foo.key: key "x" cannot run a task: '
        "it is Cancel (task-cancel) in the tasks screen"
    ]


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("?", "Help (help) everywhere"),
        ("q", "Quit (quit) everywhere"),
        ("b", "Back (tasks-close) in the tasks screen"),
        ("enter", "it selects"),
        ("ctrl+c", "it quits"),
    ],
)
def test_keys_the_tasks_screen_answers_are_refused(key: str, says: str) -> None:
    (line,) = problems(HOST + task("foo", key))
    assert line.startswith(f'gpudash.toml:7: tasks.foo.key: key "{key}"') and says in line


def test_remapping_a_screen_key_onto_a_built_in_task_key_is_reported_at_the_remap() -> None:
    lines = problems(HOST + '[keys]\ntask-cancel = "u"\n')
    assert lines == ['gpudash.toml:4: keys.task-cancel: key "u" is task "uv"\'s key']


def test_moving_the_cancel_key_frees_x_for_a_task() -> None:
    config = parse_config(HOST + '[keys]\ntask-cancel = "c"\n' + task("foo", "x"), "g.toml")
    assert config.tasks["foo"].key == "x"


def test_a_task_may_take_a_host_view_key_because_task_keys_live_in_the_tasks_screen() -> None:
    config = parse_config(HOST + task("foo", "r"), "g.toml")
    assert config.tasks["foo"].key == "r"


def test_the_app_binds_the_screen_keys_the_config_checks() -> None:
    from gpudash.ui.keys import APP_KEYS, TASKS_KEYS

    app = {k.id: k.key for k in APP_KEYS + TASKS_KEYS}
    for binding_id, (default, _) in {**ALWAYS_KEYS, **TASK_SCREEN_KEYS}.items():
        assert app[binding_id] == default
    assert key_name("?") == "question_mark" and key_name("u") == "u"


FINDINGS_KEYS = """
import asyncio, sys
from gpudash.config.load import parse_config
from gpudash.fleet import Fleet

config = parse_config(sys.stdin.read(), "gpudash.toml")

async def keys():
    async for event in Fleet(config).probe():
        if type(event).__name__ == "FindingsComputed":
            return {f.fix_task: f.fix_key for f in event.findings if f.fix_task}

print(sorted(asyncio.run(keys()).items()), "gpudash.tasks.spec" in sys.modules)
"""


def findings_keys(config: str) -> str:
    """The fix keys of a replayed H200's findings (it lacks torch, uv and a venv), and
    whether the task spec checker was imported, in a fresh interpreter."""
    import subprocess
    import sys

    saved = FIXTURES / "saved" / "dgx-h200"
    text = f'[hosts.h]\ntransport = "replay"\nreplay_dir = "{saved}"\n' + config
    out = subprocess.run(
        [sys.executable, "-c", FINDINGS_KEYS], input=text, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_findings_name_the_built_in_keys_without_loading_the_task_checker() -> None:
    assert findings_keys("") == "[('torch', 't'), ('uv', 'u'), ('venv', 'v')] False"


def test_findings_name_a_task_key_the_config_remaps() -> None:
    shown = findings_keys('[tasks.torch]\nkey = "T"\n')
    assert shown.startswith("[('torch', 'T'), ('uv', 'u'), ('venv', 'v')]")
