"""The `[ui]` and `[keys]` tables: what the app reads from the config, and how it is checked."""

from __future__ import annotations

import pytest

from gpudash.config.load import parse_config
from gpudash.config.model import ConfigError, UiConfig
from gpudash.config.schema import KEY_IDS

HOST = '[hosts.a]\ntransport = "local"\n'


def problems_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "c.toml")
    return [str(p) for p in caught.value.problems]


def test_a_config_without_ui_tables_gets_the_defaults_with_refresh_off() -> None:
    config = parse_config(HOST, "c.toml")
    assert config.ui == UiConfig(theme=None, refresh_s=0.0, save_dir="gpudash-saved")
    assert config.keys == ()


def test_ui_settings_and_key_remaps_are_read() -> None:
    text = '[ui]\ntheme = "nord"\nrefresh = 30\n[keys]\nrefresh-host = "f5, ctrl+r"\n' + HOST
    config = parse_config(text, "c.toml")
    assert config.ui.theme == "nord"
    assert config.ui.refresh_s == 30.0
    assert dict(config.keys) == {"refresh-host": "f5,ctrl+r"}


def test_a_refresh_of_zero_means_off_and_a_negative_one_is_an_error() -> None:
    assert parse_config("[ui]\nrefresh = 0\n" + HOST, "c.toml").ui.refresh_s == 0.0
    assert problems_of("[ui]\nrefresh = -5\n" + HOST) == [
        "c.toml:2: ui.refresh: must be > 0, got -5"
    ]


def test_an_unknown_ui_key_or_binding_id_names_its_line_and_the_nearest_name() -> None:
    text = '[ui]\nthem = "nord"\n[keys]\nrefresh-hots = "f5"\n' + HOST
    assert problems_of(text) == [
        "c.toml:2: ui.them: unknown key (did you mean 'theme'?)",
        "c.toml:4: keys.refresh-hots: unknown key (did you mean 'refresh-host'?)",
    ]


def test_a_key_with_spaces_inside_is_rejected() -> None:
    assert problems_of('[keys]\nquit = "ctrl q"\n' + HOST) == [
        'c.toml:2: keys.quit: expected key names separated by commas, got "ctrl q"'
    ]


def test_every_binding_id_the_app_has_is_remappable_and_no_other() -> None:
    from gpudash.ui.keys import KEY_IDS as APP_IDS

    assert set(KEY_IDS) == set(APP_IDS)
