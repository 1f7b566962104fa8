"""Config: where the file is found, what a host inherits, and every problem as one exact line."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudash.config.lines import key_lines, render_path
from gpudash.config.load import default_config, find_config_path, load_config, parse_config
from gpudash.config.model import Config, ConfigError, ConfigProblem, HostConfig
from gpudash.config.schema import FLEET_KEYS, HOST_KEYS
from tests.support import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

EXAMPLE = ROOT / "config.example.toml"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Keep the developer's own config, keys and agent out of these tests."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("GPUDASH_CONFIG", "XDG_CONFIG_HOME", "SSH_AUTH_SOCK"):
        monkeypatch.delenv(name, raising=False)
    yield home


def problems_of(text: str, file: str = "c.toml") -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, file)
    return str(caught.value).split("\n")


# --- where the file is found -------------------------------------------------------------------


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[hosts.a]\ntransport = "local"\n')
    return path


LOOKUPS = [
    # (files to create, --config, environ, the file that wins)
    (
        ["cli.toml", "env.toml", "xdg/gpudash/config.toml"],
        "cli.toml",
        {"GPUDASH_CONFIG": "env.toml", "XDG_CONFIG_HOME": "xdg"},
        "cli.toml",
    ),
    (
        ["env.toml", "xdg/gpudash/config.toml"],
        None,
        {"GPUDASH_CONFIG": "env.toml", "XDG_CONFIG_HOME": "xdg"},
        "env.toml",
    ),
    (
        ["xdg/gpudash/config.toml", "home/.config/gpudash/config.toml"],
        None,
        {"XDG_CONFIG_HOME": "xdg"},
        "xdg/gpudash/config.toml",
    ),
    (["home/.config/gpudash/config.toml"], None, {}, "home/.config/gpudash/config.toml"),
    (
        ["home/.config/gpudash/config.toml"],
        None,
        {"XDG_CONFIG_HOME": "relative/dir"},
        "home/.config/gpudash/config.toml",
    ),
    (
        ["home/.config/gpudash/config.toml"],
        None,
        {"GPUDASH_CONFIG": ""},
        "home/.config/gpudash/config.toml",
    ),
    (["home/mine.toml"], None, {"GPUDASH_CONFIG": "~/mine.toml"}, "home/mine.toml"),
    (["xdg/other.toml"], None, {"XDG_CONFIG_HOME": "xdg"}, None),
    ([], None, {}, None),
]


@pytest.mark.parametrize(("files", "cli", "environ", "expected"), LOOKUPS)
def test_the_config_is_found_by_flag_then_env_then_xdg_then_home(
    tmp_path: Path, files: list[str], cli: str | None, environ: dict[str, str], expected: str | None
) -> None:
    for name in files:
        _touch(tmp_path / name)

    def absolute(value: str) -> str:
        return (
            value
            if value in ("", "relative/dir") or value.startswith("~")
            else str(tmp_path / value)
        )

    env = {key: absolute(value) for key, value in environ.items()}
    env["HOME"] = str(tmp_path / "home")
    found = find_config_path(absolute(cli) if cli else None, env)
    assert found == (tmp_path / expected if expected else None)


def test_a_missing_file_named_by_the_flag_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    _touch(tmp_path / "home/.config/gpudash/config.toml")
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as caught:
        find_config_path(str(missing), {"HOME": str(tmp_path / "home")})
    assert str(caught.value) == f"{missing}: no such file (named by --config)"
    assert caught.value.problems == [
        ConfigProblem(str(missing), None, "", "no such file (named by --config)")
    ]


def test_a_missing_file_named_by_the_environment_is_an_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone.toml")
    with pytest.raises(
        ConfigError, match=r"^.*gone\.toml: no such file \(named by \$GPUDASH_CONFIG\)$"
    ):
        load_config(None, {"GPUDASH_CONFIG": missing, "HOME": str(tmp_path)})


def test_an_empty_config_flag_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"^--config: empty path$"):
        find_config_path("", {})


def test_without_any_file_the_embedded_default_triages_this_machine(tmp_path: Path) -> None:
    config = load_config(None, {"HOME": str(tmp_path)})
    assert config == default_config()
    assert config.path is None
    assert config.hosts == (HostConfig(name="localhost", transport="local"),)
    assert config.hosts[0].address == "localhost"


def test_a_found_file_is_loaded_and_named_as_its_path(tmp_path: Path) -> None:
    path = _touch(tmp_path / "x.toml")
    config = load_config(str(path), {})
    assert config.path == str(path)
    assert [host.name for host in config.hosts] == ["a"]


def test_a_file_that_is_not_utf8_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_bytes(b'[hosts.a]\nuser = "\xff"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), {})
    assert str(caught.value) == f"{path}:2: not UTF-8 text (TOML must be UTF-8)"


def test_a_directory_named_as_the_config_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(str(tmp_path), {})
    assert str(caught.value).startswith(f"{tmp_path}: cannot read: ")


# --- what a host gets ---------------------------------------------------------------------------

INHERITANCE = """\
[defaults]
user = "root"
port = 2200
jump = "bastion"
tags = ["lab"]
connect_timeout = 5
concurrency = 8
max_handshakes = 4

[hosts.bastion]
address = "bastion.example.com"

[hosts.gpu1]
port = 22
identity_file = "~/.ssh/id_gpu"
model_dirs = ["~/weights"]

[hosts]
direct = { jump = "", identity_file = ["~/a", "/abs/b"], known_hosts = "~/kh" }
"""


def test_hosts_inherit_defaults_and_override_them_key_by_key(isolated_home: Path) -> None:
    config = parse_config(INHERITANCE, "c.toml")
    assert (config.concurrency, config.max_handshakes) == (8, 4)
    bastion, gpu1, direct = config.hosts
    assert gpu1 == HostConfig(
        name="gpu1",
        transport="ssh",
        address="gpu1",
        user="root",
        port=22,
        identity_files=(f"{isolated_home}/.ssh/id_gpu",),
        jump="bastion",
        tags=("lab",),
        model_dirs=("~/weights",),
        connect_timeout=5.0,
    )
    assert (bastion.address, bastion.port, bastion.jump) == ("bastion.example.com", 2200, None)
    assert direct.jump is None
    assert direct.identity_files == (f"{isolated_home}/a", "/abs/b")
    assert direct.known_hosts == f"{isolated_home}/kh"
    assert config.host("gpu1") is gpu1
    assert config.host("GPU1") is None


def test_a_host_with_no_keys_gets_the_documented_defaults() -> None:
    config = parse_config("[hosts.box]\n", "c.toml")
    assert config == Config("c.toml", (HostConfig(name="box"),))
    host = config.hosts[0]
    assert (host.transport, host.address, host.host_key_policy) == ("ssh", "box", "strict")
    assert (host.connect_timeout, host.probe_timeout, host.section_timeout) == (10.0, 60.0, 20.0)
    assert host.model_dirs == ("/root/models", "~/models", "~/.cache/huggingface/hub")
    assert (config.concurrency, config.max_handshakes) == (64, 16)


def test_hosts_keep_the_order_of_the_file() -> None:
    text = "[hosts.zeta]\n[hosts.alpha]\n[hosts]\nmid = {}\n"
    assert [h.name for h in parse_config(text, "c.toml").hosts] == ["zeta", "alpha", "mid"]


def test_a_replay_host_with_its_directory_is_valid(isolated_home: Path) -> None:
    text = '[hosts.demo]\ntransport = "replay"\nreplay_dir = "~/saved/demo"\n'
    host = parse_config(text, "c.toml").hosts[0]
    assert (host.transport, host.replay_dir) == ("replay", f"{isolated_home}/saved/demo")


def test_a_chain_of_configured_jump_hosts_is_valid() -> None:
    text = '[hosts.outer]\n[hosts.inner]\njump = "outer"\n[hosts.gpu]\njump = "ops@inner:2222"\n'
    assert [h.jump for h in parse_config(text, "c.toml").hosts] == [None, "outer", "ops@inner:2222"]


# --- every problem, exactly ---------------------------------------------------------------------

ERRORS = [
    # (what is wrong, config text, the exact problem lines)
    ("toml syntax", "[hosts.a]\nport = \n", ["c.toml:2: invalid TOML: Invalid value (column 8)"]),
    (
        "toml syntax at end",
        '[hosts.a]\nuser = """x',
        ["c.toml: invalid TOML: Unterminated string (at end of file)"],
    ),
    ("a table defined twice", "[hosts.a]\n\n[hosts.a]\n", ["c.toml:3: hosts.a: defined twice"]),
    (
        "a host as a table and as an inline table",
        "[hosts]\na = {}\n[hosts.a]\n",
        ["c.toml:3: hosts.a: defined twice"],
    ),
    (
        "an inline table extended later",
        "hosts.a = {}\nhosts.a.port = 1\n",
        [
            "c.toml:2: hosts.a: already defined as an inline table ({ ... }), which cannot be"
            " added to later"
        ],
    ),
    (
        "unknown host key",
        "[hosts.a]\nprot = 22\n",
        ["c.toml:2: hosts.a.prot: unknown key (did you mean 'port'?)"],
    ),
    ("unknown key, nothing near", "[hosts.a]\nzzz = 1\n", ["c.toml:2: hosts.a.zzz: unknown key"]),
    (
        "unknown defaults key",
        "[defaults]\nidentity_files = []\n[hosts.a]\n",
        ["c.toml:2: defaults.identity_files: unknown key (did you mean 'identity_file'?)"],
    ),
    (
        "unknown table",
        "[host.a]\n[hosts.b]\n",
        [
            "c.toml:1: host: unknown table (did you mean 'hosts'?); expected [defaults] or"
            " [hosts.NAME]"
        ],
    ),
    (
        "a table gpudash does not have",
        "[plugins]\n[hosts.b]\n",
        ["c.toml:1: plugins: unknown table; expected [defaults] or [hosts.NAME]"],
    ),
    (
        "host key at top level",
        "port = 22\n[hosts.a]\n",
        ["c.toml:1: port: belongs in [defaults] or a [hosts.NAME] table"],
    ),
    (
        "fleet key in a host",
        "[hosts.a]\nconcurrency = 4\n",
        ["c.toml:2: hosts.a.concurrency: only allowed in [defaults]: it applies to the whole run"],
    ),
    (
        "integer as a string",
        '[hosts.a]\nport = "22"\n',
        ["c.toml:2: hosts.a.port: expected an integer, got a string"],
    ),
    (
        "boolean is not an integer",
        "[defaults]\nconcurrency = true\n[hosts.a]\n",
        ["c.toml:2: defaults.concurrency: expected an integer, got a boolean"],
    ),
    (
        "port too high",
        "[hosts.a]\nport = 65536\n",
        ["c.toml:2: hosts.a.port: must be between 1 and 65535, got 65536"],
    ),
    (
        "port zero",
        "[hosts.a]\nport = 0\n",
        ["c.toml:2: hosts.a.port: must be between 1 and 65535, got 0"],
    ),
    (
        "concurrency zero",
        "[defaults]\nconcurrency = 0\n[hosts.a]\n",
        ["c.toml:2: defaults.concurrency: must be at least 1, got 0"],
    ),
    (
        "timeout zero",
        "[hosts.a]\nconnect_timeout = 0\n",
        ["c.toml:2: hosts.a.connect_timeout: must be > 0, got 0"],
    ),
    (
        "timeout negative",
        "[defaults]\nprobe_timeout = -1.5\n[hosts.a]\n",
        ["c.toml:2: defaults.probe_timeout: must be > 0, got -1.5"],
    ),
    (
        "timeout infinite",
        "[hosts.a]\nsection_timeout = inf\n",
        ["c.toml:2: hosts.a.section_timeout: must be a finite number of seconds, got inf"],
    ),
    (
        "timeout as a string",
        '[hosts.a]\nsection_timeout = "20s"\n',
        ["c.toml:2: hosts.a.section_timeout: expected a number of seconds, got a string"],
    ),
    (
        "unknown transport",
        '[hosts.a]\ntransport = "sssh"\n',
        [
            'c.toml:2: hosts.a.transport: unknown value "sssh"; expected one of "ssh", "local",'
            ' "replay" (did you mean "ssh"?)'
        ],
    ),
    (
        "unknown host key policy",
        '[hosts.a]\nhost_key_policy = "accept_new"\n',
        [
            'c.toml:2: hosts.a.host_key_policy: unknown value "accept_new"; expected one of'
            ' "strict", "accept-new", "insecure" (did you mean "accept-new"?)'
        ],
    ),
    (
        "replay without its directory",
        '[hosts.a]\ntransport = "replay"\n',
        [
            'c.toml:2: hosts.a.transport: transport "replay" needs replay_dir, a directory'
            " written by `gpudash probe --save`"
        ],
    ),
    (
        "replay from defaults without a directory",
        '[defaults]\ntransport = "replay"\n[hosts.a]\n',
        [
            'c.toml:3: hosts.a: transport "replay" (from [defaults]) needs replay_dir, a'
            " directory written by `gpudash probe --save`"
        ],
    ),
    (
        "a jump naming itself",
        '[hosts.a]\njump = "a"\n',
        ["c.toml:2: hosts.a.jump: jumps through this host itself"],
    ),
    (
        "a jump cycle",
        '[hosts.a]\njump = "b"\n[hosts.b]\njump = "a"\n',
        [
            'c.toml:2: hosts.a.jump: jump cycle: "a" -> "b" -> "a"',
            'c.toml:4: hosts.b.jump: jump cycle: "b" -> "a" -> "b"',
        ],
    ),
    (
        "a jump through a local host",
        '[hosts.me]\ntransport = "local"\n[hosts.a]\njump = "me"\n',
        ['c.toml:4: hosts.a.jump: jump host "me" has transport "local"; a jump host must use ssh'],
    ),
    (
        "a jump chain written with commas",
        '[hosts.a]\njump = "b,c"\n',
        ['c.toml:2: hosts.a.jump: expected one host as [user@]host[:port], got "b,c"'],
    ),
    (
        "a jump port out of range",
        '[hosts.a]\njump = "ops@b:99999"\n',
        ["c.toml:2: hosts.a.jump: port must be between 1 and 65535, got 99999"],
    ),
    (
        "names differing only by case",
        "[hosts.GPU1]\n[hosts.gpu1]\n",
        ["c.toml:2: hosts.gpu1: duplicate host: same name as hosts.GPU1 but for case"],
    ),
    ("empty host name", '[hosts.""]\n', ['c.toml:1: hosts."": empty host name']),
    (
        "control character in a name",
        '[hosts."a\\tb"]\n',
        ['c.toml:1: hosts."a\\tb": host name contains a control character'],
    ),
    (
        "a host that is not a table",
        '[hosts]\na = "gpu1.example.com"\n',
        ["c.toml:2: hosts.a: expected a table, got a string"],
    ),
    (
        "hosts that is not a table",
        'hosts = ["a"]\n',
        ["c.toml:1: hosts: expected a table of [hosts.NAME] tables, got an array"],
    ),
    (
        "hosts as an array of tables",
        "[[hosts]]\nname = 'a'\n",
        ["c.toml:1: hosts: expected a table of [hosts.NAME] tables, got an array"],
    ),
    (
        "defaults that is not a table",
        "defaults = 1\n[hosts.a]\n",
        ["c.toml:1: defaults: expected a table, got an integer"],
    ),
    (
        "an empty hosts table",
        "[hosts]\n",
        ["c.toml:1: hosts: no hosts defined; add a [hosts.NAME] table"],
    ),
    (
        "no hosts at all",
        "[defaults]\nuser = 'x'\n",
        ["c.toml: hosts: no hosts defined; add a [hosts.NAME] table"],
    ),
    (
        "a name with a space and no address",
        '[hosts."gpu box"]\n',
        [
            'c.toml:1: hosts."gpu box": the name has a space, so it cannot be the address: set'
            " address"
        ],
    ),
    (
        "a wrong array element",
        '[hosts.a]\ntags = [\n  "ok",\n  7,\n]\n',
        ["c.toml:4: hosts.a.tags[1]: expected a string, got an integer"],
    ),
    (
        "an array where a string goes",
        "[hosts.a]\nuser = ['x']\n",
        ["c.toml:2: hosts.a.user: expected a string, got an array"],
    ),
    (
        "a string where an array goes",
        '[hosts.a]\ntags = "gpu"\n',
        ["c.toml:2: hosts.a.tags: expected an array of strings, got a string"],
    ),
    (
        "identity_file neither string nor array",
        "[hosts.a]\nidentity_file = 1\n",
        [
            "c.toml:2: hosts.a.identity_file: expected a string or an array of strings, got an"
            " integer"
        ],
    ),
    (
        "an empty address",
        '[hosts.a]\naddress = ""\n',
        ["c.toml:2: hosts.a.address: must not be empty"],
    ),
    (
        "a network target that is not a URL",
        '[hosts.a]\nnetwork_targets = ["pypi.org"]\n',
        [
            "c.toml:2: hosts.a.network_targets[0]: expected an http:// or https:// URL, got"
            ' "pypi.org"'
        ],
    ),
    (
        "a newline inside a model dir",
        '[hosts.a]\nmodel_dirs = ["/m\\n/x"]\n',
        ['c.toml:2: hosts.a.model_dirs[0]: contains a control character: "/m\\n/x"'],
    ),
    (
        "a date where seconds go",
        "[hosts.a]\nprobe_timeout = 2024-01-01\n",
        ["c.toml:2: hosts.a.probe_timeout: expected a number of seconds, got a date"],
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS]
)
def test_each_problem_is_one_exact_line_naming_file_line_and_key(
    text: str, expected: list[str]
) -> None:
    assert problems_of(text) == expected


def test_every_problem_is_reported_at_once_in_file_order() -> None:
    text = (
        '[hosts.a]\nport = "x"\nprot = 1\n\n'
        '[hosts.b]\nconnect_timeout = -1\ntransport = "nope"\n[zz]\n'
    )
    assert problems_of(text) == [
        "c.toml:2: hosts.a.port: expected an integer, got a string",
        "c.toml:3: hosts.a.prot: unknown key (did you mean 'port'?)",
        "c.toml:6: hosts.b.connect_timeout: must be > 0, got -1",
        'c.toml:7: hosts.b.transport: unknown value "nope"; expected one of "ssh", "local",'
        ' "replay"',
        "c.toml:8: zz: unknown table; expected [defaults] or [hosts.NAME]",
    ]


def test_a_bad_default_is_one_problem_not_one_per_host() -> None:
    text = "[defaults]\nport = 0\n[hosts.a]\n[hosts.b]\n[hosts.c]\n"
    assert problems_of(text) == ["c.toml:2: defaults.port: must be between 1 and 65535, got 0"]


def test_a_problem_stays_on_one_line_whatever_the_value_holds() -> None:
    text = '[hosts."x\\u0085y"]\n[hosts.a]\nuser = "a\\nb"\ntransport = "s\\u2028sh"\nport = 0\n'
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "c.toml")
    error = caught.value
    lines = str(error).splitlines()
    assert len(lines) == len(error.problems) == 4
    assert all(line.startswith("c.toml:") for line in lines)
    assert [str(problem) for problem in error.problems] == lines


def test_a_problem_prints_without_a_line_when_none_is_known() -> None:
    assert str(ConfigProblem("c.toml", None, "hosts", "no hosts")) == "c.toml: hosts: no hosts"
    assert str(ConfigProblem("c.toml", 3, "hosts.a.port", "bad")) == "c.toml:3: hosts.a.port: bad"
    assert str(ConfigProblem("c.toml", 3, "", "invalid TOML: x")) == "c.toml:3: invalid TOML: x"


def test_the_file_name_in_problems_is_the_path_that_was_loaded(tmp_path: Path) -> None:
    path = tmp_path / "conf.toml"
    path.write_text("[hosts.a]\n\nport = 70000\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), {})
    assert str(caught.value) == f"{path}:3: hosts.a.port: must be between 1 and 65535, got 70000"


# --- finding the line of a key ------------------------------------------------------------------

LAYOUTS = [
    # (layout, text, the key path whose line is wanted, that line)
    ("table header", "[hosts.a]\n\n\nport = 1\n", ("hosts", "a", "port"), 4),
    (
        "quoted name",
        '[hosts."gpu.box"]\naddress = "x"\nport = 1\n',
        ("hosts", "gpu.box", "port"),
        3,
    ),
    ("quoted name with escapes", '[hosts."a\\u0041"]\nport = 1\n', ("hosts", "aA", "port"), 2),
    ("literal quoted name", "[hosts.'a b']\n\nport = 1\n", ("hosts", "a b", "port"), 3),
    ("spaces around dots", "[ hosts . a ]\nport = 1\n", ("hosts", "a", "port"), 2),
    (
        "dotted keys at top level",
        "hosts.a.user = 'u'\nhosts.a.port = 1\n",
        ("hosts", "a", "port"),
        2,
    ),
    ("dotted keys in a table", "[hosts]\na.user = 'u'\n\na.port = 1\n", ("hosts", "a", "port"), 4),
    ("inline table", "[hosts]\nb = {}\na = { user = 'u', port = 1 }\n", ("hosts", "a", "port"), 3),
    ("inline table at top level", "hosts.a = { port = 1 }\n", ("hosts", "a", "port"), 1),
    ("nested inline table", "hosts = { a = { port = 1 } }\n", ("hosts", "a", "port"), 1),
    ("a table implied by a dotted key", "[hosts]\na.user = 'u'\na.port = 1\n", ("hosts", "a"), 2),
    (
        "strings that look like syntax",
        "[hosts.a]\nuser = \"x = [y] # z\"\naddress = '[hosts.b]'\nport = 1\n",
        ("hosts", "a", "port"),
        4,
    ),
    (
        "a multi-line string",
        '[hosts.a]\nuser = """\n[hosts.b]\nport = 2\n"""\nport = 1\n',
        ("hosts", "a", "port"),
        6,
    ),
    (
        "a multi-line literal with quotes",
        "[hosts.a]\nuser = '''x\n'''''\nport = 1\n",
        ("hosts", "a", "port"),
        4,
    ),
    (
        "a multi-line array with comments",
        '[hosts.a]\ntags = [ # c\n  "a", # [x]\n  "b",\n]\nport = 1\n',
        ("hosts", "a", "tags", 1),
        4,
    ),
    (
        "comments and CRLF",
        "# [hosts.b]\r\n[hosts.a] # x\r\n\r\nport = 1 # y\r\n",
        ("hosts", "a", "port"),
        4,
    ),
    ("array of tables", "[[x]]\na = 1\n[[x]]\na = 2\n", ("x", 1, "a"), 4),
    (
        "date-time with a space",
        "[hosts.a]\nwhen = 1979-05-27 07:32:00Z\nport = 1\n",
        ("hosts", "a", "port"),
        3,
    ),
]


@pytest.mark.parametrize(
    ("text", "path", "line"), [c[1:] for c in LAYOUTS], ids=[c[0] for c in LAYOUTS]
)
def test_the_line_of_a_key_is_found_in_every_toml_layout(
    text: str, path: tuple[str | int, ...], line: int
) -> None:
    assert key_lines(text, tomllib.loads(text)).line(path) == line


def test_no_line_is_given_when_the_scan_disagrees_with_the_parsed_document() -> None:
    found = key_lines("[hosts.a]\nport = 1\n", {"hosts": {"b": {}}})
    assert found.line(("hosts", "a", "port")) is None
    assert found.line(("hosts", "a")) is None


def test_a_key_path_is_printed_as_toml_writes_it() -> None:
    assert render_path(("hosts", "gpu-1", "tags", 2)) == "hosts.gpu-1.tags[2]"
    assert render_path(("hosts", "gpu box", "port")) == 'hosts."gpu box".port'
    assert render_path(("hosts", "")) == 'hosts.""'
    assert render_path(("hosts", "a\nb\x85")) == 'hosts."a\\nb\\u0085"'


# --- the example file ---------------------------------------------------------------------------


def test_the_example_config_parses_with_the_hosts_it_documents() -> None:
    config = parse_config(EXAMPLE.read_text(), str(EXAMPLE))
    assert [host.name for host in config.hosts] == [
        "gpu1",
        "bastion",
        "gpu-private",
        "h200-a",
        "h200-b",
    ]
    gpu1 = config.host("gpu1")
    assert gpu1 is not None
    assert (gpu1.user, gpu1.port, gpu1.address) == ("ubuntu", 2222, "gpu1.example.com")
    assert gpu1.identity_files[0].endswith("/.ssh/gpu1_ed25519")
    assert "~" not in gpu1.identity_files[0]
    private = config.host("gpu-private")
    assert private is not None and private.jump == "bastion"
    assert [host.name for host in config.hosts if "h200" in host.tags] == ["h200-a", "h200-b"]
    assert config.hosts[0] == HostConfig(
        name="gpu1",
        address="gpu1.example.com",
        user="ubuntu",
        port=2222,
        identity_files=gpu1.identity_files,
    ), "the [defaults] block in the example must repeat the built-in defaults"


@pytest.mark.parametrize("key", [*HOST_KEYS, *FLEET_KEYS])
def test_the_example_config_documents_every_key(key: str) -> None:
    text = EXAMPLE.read_text()
    assert re.search(rf"^(# )?{key}( =|:)", text, re.MULTILINE), f"{key} is not documented"


@given(
    hosts=st.lists(
        st.tuples(
            st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=8),
            st.sampled_from(["header", "dotted", "inline"]),
            st.lists(st.sampled_from(["port", "user", "tags"]), unique=True, max_size=3),
        ),
        max_size=5,
        unique_by=lambda host: host[0],
    )
)
def test_the_scanner_finds_the_written_line_of_every_key_whatever_the_names(
    hosts: list[tuple[str, str, list[str]]],
) -> None:
    values = {"port": "22", "user": '"a # [b] = c"', "tags": '[\n  "x", # ]\n  "y = z",\n]'}
    lines: list[str] = []
    expected: dict[tuple[str | int, ...], int] = {}

    def write(path: tuple[str, ...], statement: str) -> None:
        expected[path] = len(lines) + 1
        lines.extend(statement.split("\n"))

    # Top-level statements first: after a [header], `hosts.x.k = v` would land in that table.
    for name, style, keys in sorted(hosts, key=lambda host: host[1] == "header"):
        key = render_path((name,))
        if style == "inline":
            pairs = ", ".join(f"{k} = {values[k]}" for k in keys if k != "tags")
            line = len(lines) + 1
            lines.append(f"hosts.{key} = {{ {pairs} }}")
            expected |= {("hosts", name, k): line for k in keys if k != "tags"}
        elif style == "dotted":
            for k in keys:
                write(("hosts", name, k), f"hosts.{key}.{k} = {values[k]}")
        else:
            write(("hosts", name), f"[hosts.{key}]  # {name!r}")
            for k in keys:
                write(("hosts", name, k), f"{k} = {values[k]}")
    text = "\n".join(lines) + "\n"
    found = key_lines(text, tomllib.loads(text))
    assert {path: found.line(path) for path in expected} == expected, text
