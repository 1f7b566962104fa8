"""A task key must not shadow a key the tasks screen already answers: the config says which
key, where, and what it does already (gpudash/config_keys.py)."""

from __future__ import annotations

import pytest

from gpudash.config import ConfigError, parse_config
from gpudash.config_keys import ALWAYS_KEYS, TASK_SCREEN_KEYS, key_name

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
    config = parse_config(HOST + '[keys]\ntask-cancel = "k"\n' + task("foo", "x"), "g.toml")
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
