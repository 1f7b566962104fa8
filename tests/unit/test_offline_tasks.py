"""A host the probe found offline: tasks that download stop before sending, naming the cause
(issue 23 item 15); a mirror or local wheels need no internet and still run."""

from __future__ import annotations


def test_facts_say_offline_only_when_every_named_site_failed() -> None:
    from gpudash.probe.sections.network import Network, Target
    from gpudash.tasks.prepare import PrepareError, _offline, prepare
    from gpudash.tasks.spec import load_tasks

    dns = Target("https://pypi.org/simple/", "pypi.org", False, error="could not resolve")
    gh = Target("https://github.com", "github.com", False)
    ok = Target("https://github.com", "github.com", True, ok=True)
    local = Target("http://127.0.0.1:9/", "127.0.0.1", None, error="refused")
    assert (
        _offline(Network((dns, gh))) == "cannot reach pypi.org, github.com: name resolution failed"
    )
    assert _offline(Network((dns, ok))) is None
    assert _offline(Network((local,))) is None  # an IP literal says nothing of the internet
    from gpudash.tasks.prepare import Facts

    offline = Facts(offline="cannot reach pypi.org: name resolution failed")
    tasks = load_tasks(
        {
            "mirror": {
                "title": "from a mirror",
                "kind": "pip",
                "params": {"packages": ["x"], "index_url": "https://mirror.local/simple"},
            }
        }
    )
    try:
        prepare(tasks["uv"], offline)
    except PrepareError as exc:
        assert "cannot reach pypi.org: name resolution failed" in str(exc)
    else:
        raise AssertionError("uv on an offline host must not be prepared")
    assert prepare(tasks["mirror"], offline).script  # a mirror: no public internet needed
