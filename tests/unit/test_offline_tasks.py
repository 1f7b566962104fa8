"""A host the probe found offline: tasks that download stop before sending, naming the cause
(issue 23 item 15); a mirror or local wheels need no internet and still run, and a site the
task does not use failing says nothing about it."""

from __future__ import annotations

import pytest

from gpudash.probe.sections.network import Network, Target
from gpudash.tasks.facts import _sites
from gpudash.tasks.prepare import Facts, PrepareError, offline, prepare
from gpudash.tasks.spec import load_tasks

PYPI_DNS = Target("https://pypi.org/simple/", "pypi.org", False, error="could not resolve")
GITHUB_DNS = Target("https://github.com", "github.com", False)
GITHUB_OK = Target("https://github.com", "github.com", True, ok=True)
HF_DNS = Target("https://huggingface.co", "huggingface.co", False)
LOCAL = Target("http://127.0.0.1:9/", "127.0.0.1", None, error="refused")


def facts(*targets: Target) -> Facts:
    return Facts(sites=_sites(Network(targets)))


def test_offline_when_the_sites_a_task_needs_all_failed() -> None:
    uv = ("pypi.org", "astral.sh", "github.com")
    assert offline(uv, facts(PYPI_DNS, GITHUB_DNS)) == (
        "cannot reach pypi.org, github.com: name resolution failed"
    )
    assert offline(uv, facts(PYPI_DNS, GITHUB_OK)) is None  # one of them answered
    assert offline(uv, facts(LOCAL)) is None  # an IP literal says nothing of the internet
    assert offline(("download.pytorch.org",), facts(HF_DNS)) is None  # one other site: unknown
    both = facts(HF_DNS, Target("https://x.invalid", "x.invalid", False))
    assert offline(("download.pytorch.org",), both) == (  # no name resolves at all
        "cannot reach huggingface.co, x.invalid: name resolution failed"
    )


def test_uv_is_not_prepared_on_an_offline_host_and_a_mirror_still_is() -> None:
    tasks = load_tasks(
        {
            "mirror": {
                "title": "from a mirror",
                "kind": "pip",
                "params": {"packages": ["x"], "index_url": "https://mirror.local/simple"},
            }
        }
    )
    down = facts(PYPI_DNS, GITHUB_DNS)
    with pytest.raises(PrepareError, match=r"uv: cannot reach pypi\.org, github\.com: name reso"):
        prepare(tasks["uv"], down)
    assert prepare(tasks["mirror"], down).script  # a mirror: no public internet needed
