"""The pure parts of a copy fan-out (gpudash/tasks/copy/fanout.py): which tasks of a run are
fed as one chain, and which lines of the shared source job's log each destination sees."""

from __future__ import annotations

import asyncio

import pytest

from gpudash.config.load import parse_config
from gpudash.config.model import ConfigError
from gpudash.tasks.copy.fanout import CopyGroup, _names, _shown_line
from gpudash.tasks.kinds import run_groups
from gpudash.tasks.spec import load_tasks

HOSTS = ["h0", "h1", "h2", "h3"]
NAMES = {"d1": "h1", "d2": "h2", "d3": "h3"}


def groups(params: dict, hosts: list[str] = HOSTS, names: tuple[str, ...] = ("copy",)):
    specs = load_tasks({"copy": {"params": params}})
    return run_groups(specs, list(names), hosts)


def test_two_or_more_destinations_of_a_direct_copy_are_one_group():
    got = groups({"from": "h0", "path": "~/src"}, ["h1", "h2", "h3"])
    assert list(got) == ["copy"]
    assert got["copy"].waiting == {"h1", "h2", "h3"}


def test_the_source_is_no_destination_of_its_own_path_but_is_of_another():
    same = groups({"from": "h0", "path": "~/src"})
    assert same["copy"].waiting == {"h1", "h2", "h3"}
    other = groups({"from": "h0", "path": "~/src", "to": "~/dst"})
    assert other["copy"].waiting == set(HOSTS)


@pytest.mark.parametrize(
    "params, hosts",
    [
        ({"from": "h0", "path": "~/src"}, ["h1"]),  # one destination: a plain copy
        ({"from": "h0", "path": "~/src"}, ["h0", "h1"]),  # the source + one
        ({"from": "h0", "path": "~/src", "fanout": False}, HOSTS),
        ({"from": "h0", "path": "~/src", "via": "gpudash"}, HOSTS),
    ],
)
def test_no_group_for_one_destination_fanout_off_or_via_gpudash(params: dict, hosts: list[str]):
    assert groups(params, hosts) == {}


def test_tasks_that_are_not_copies_or_unknown_get_no_group():
    assert groups({"from": "h0", "path": "~/src"}, names=("uv", "nope")) == {}


def test_fanout_is_a_documented_bool_param():
    base = '[hosts.h0]\naddress = "x"\n[tasks.copy]\nparams = { from = "h0", fanout = '
    parse_config(base + "false }\n", "c.toml")  # accepted
    with pytest.raises(ConfigError) as info:
        parse_config(base + '"no" }\n', "c.toml")
    assert any("fanout" in str(p) for p in info.value.problems), info.value.problems


def test_a_group_settles_once_every_destination_joined_or_withdrew():
    async def scenario() -> bool:
        group = CopyGroup("copy", ["h1", "h2"])
        group.withdraw("h1")
        assert not group._settled.is_set()
        group.withdraw("h2")
        return group._settled.is_set()

    assert asyncio.run(scenario())


def test_each_destination_sees_only_its_own_labelled_lines():
    assert _shown_line("@d2 resuming: 3 files already there", "d2", NAMES) == (
        "resuming: 3 files already there",
        None,
    )
    assert _shown_line("@d3 resuming: 3 files already there", "d2", NAMES) == (None, None)


def test_its_end_line_is_its_verdict_and_not_shown():
    assert _shown_line("@d2 gpudash-copy end d2 0", "d2", NAMES) == (None, 0)
    assert _shown_line("@d2 gpudash-copy end d2 1", "d2", NAMES) == (None, 1)
    assert _shown_line("@d1 gpudash-copy end d1 0", "d2", NAMES) == (None, None)


def test_shared_lines_name_the_hosts_not_the_labels():
    line = "chain: this host -> @d1 -> @d2 -> @d3 (4 streams)"
    assert _shown_line(line, "d2", NAMES) == (
        "chain: this host -> h1 -> h2 -> h3 (4 streams)",
        None,
    )
    # a label no destination has stays as it is (never another host's name)
    assert _shown_line("to @d12 and @d1", "d1", NAMES) == ("to @d12 and h1", None)


def test_a_running_fanouts_names_file_is_read_as_untrusted_text():
    text = "d1 h1\nd2 gpu-b.lab\nx3 h3\nd4 $(reboot)\nd5\n../d6 h6\nd7 h7 extra\n"
    assert _names(text) == (("d1", "h1"), ("d2", "gpu-b.lab"))
