"""A model from a peer and a copy's JIT caches: the config checks of the new parameters, and
the pure halves of the two probes (their output -> what to copy). The copies themselves run
over real sshds in tests/ssh/test_copy_peer.py and tests/rig/test_copy_peer.py."""

from __future__ import annotations

import pytest

from gpudash.config.load import parse_config
from gpudash.config.model import ConfigError
from gpudash.tasks.copy import caches, peer
from gpudash.tasks.copy.params import CopyParams
from gpudash.tasks.prepare import prepare

HOSTS = '[hosts.gpu-a]\naddress = "10.0.0.1"\n\n[hosts.gpu-b]\naddress = "10.0.0.2"\n\n'


def problem(tasks: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(HOSTS + tasks, "c.toml")
    return str(caught.value)


def test_a_model_from_an_unknown_host_is_refused_with_a_suggestion():
    said = problem('[tasks.model]\nparams = { repo = "org/m", from = "gpu-aa" }\n')
    assert (
        'c.toml:8: tasks.model.params.from: unknown host "gpu-aa" (did you mean "gpu-a"?)'
        " (hosts: gpu-a, gpu-b)"
    ) in said


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ('via = "scp"', "tasks.model.params.via: expected one of direct, gpudash"),
        ("streams = 0", "tasks.model.params.streams: expected 1 to 64 streams"),
        ('frm = "gpu-a"', "tasks.model.params.frm: unknown"),
    ],
)
def test_a_model_copy_s_other_params_are_checked(params: str, expected: str):
    said = problem(f'[tasks.model]\nparams = {{ repo = "org/m", from = "gpu-a", {params} }}\n')
    assert expected in said


def test_a_model_without_from_still_downloads_and_sudo_is_refused_only_with_from():
    config = parse_config(HOSTS + '[tasks.model]\nparams = { repo = "org/m" }\nsudo = true\n', "c")
    assert "hf download" in prepare(config.tasks["model"]).script
    said = problem('[tasks.model]\nsudo = true\nparams = { repo = "org/m", from = "gpu-a" }\n')
    assert "tasks.model.sudo: a copy runs as the login user" in said


def test_caches_is_a_checked_bool_of_the_copy_task():
    said = problem('[tasks.copy]\nparams = { from = "gpu-a", caches = "yes" }\n')
    assert "tasks.copy.params.caches" in said
    config = parse_config(HOSTS + '[tasks.copy]\nparams = { from = "gpu-a", caches = true }\n', "c")
    assert CopyParams.of(config.tasks["copy"].params).caches is True
    assert "caches = true" in prepare(config.tasks["copy"]).script


def test_the_model_confirmation_says_it_copies_instead_of_downloading():
    config = parse_config(
        HOSTS + '[tasks.model]\nparams = { repo = "org/m", from = "gpu-a" }\n', "c"
    )
    prepared = prepare(config.tasks["model"])
    assert "hf download" not in prepared.script
    assert prepared.script.startswith("# model org/m: copied from gpu-a (params.from)")


# --- the peer's answer: which folder --------------------------------------------------------------


def test_the_peer_probe_output_becomes_a_location_or_one_line_why_not():
    found = peer.parse("plain\t~/models/org/m\n", "h0", "org/m", "")
    assert (found.layout, found.path) == ("plain", "~/models/org/m")
    found = peer.parse("cache\t/data/hf/hub/models--org--m\tabc123\n", "h0", "org/m", "")
    assert (found.layout, found.path, found.snapshot) == (
        "cache",
        "/data/hf/hub/models--org--m",
        "abc123",
    )
    none = peer.parse(
        "none\t~/models/org/m\t~/.cache/huggingface/hub/models--org--m\n", "h0", "org/m", ""
    )
    assert none.layout == "" and none.why == (
        "h0 has no copy of org/m: looked at ~/models/org/m"
        " and ~/.cache/huggingface/hub/models--org--m"
    )
    norev = peer.parse("norev\t~/hub/models--org--m\tmain v1 \n", "h0", "org/m", "v2")
    assert norev.why.endswith("but not revision v2 (its refs: main, v1)")
    assert peer.parse("", "h0", "org/m", "").why.startswith("h0 did not answer")
    # a path that climbs or is relative is never taken (remote text is untrusted)
    assert peer.parse("plain\t~/../../etc\n", "h0", "org/m", "").layout == ""
    assert peer.parse("plain\tmodels/x\n", "h0", "org/m", "").layout == ""
    assert peer.parse("plain\t~/m/\x1b[2Jx\n", "h0", "org/m", "").layout == ""
    shown = peer.parse("none\t~/a\x1b[2J\t~/b\n", "h0", "org/m", "").why
    assert "\x1b" not in shown and shown.endswith("and ~/b")


def test_the_copy_of_a_found_model_lands_at_the_same_path_and_keeps_via_and_streams():
    found = peer.Located("cache", "~/.cache/huggingface/hub/models--org--m", "abc")
    params = peer.copy_params(
        {"repo": "org/m", "from": "h0", "via": "gpudash", "streams": 8, "dir": "~/models"}, found
    )
    copy = CopyParams.of(params)
    assert (copy.source, copy.path, copy.to) == ("h0", found.path, found.path)
    assert (copy.via, copy.streams, copy.fanout, copy.caches) == ("gpudash", 8, False, False)


# --- the caches' answer: what to copy, what is skipped ------------------------------------------


def test_cache_probe_lines_become_a_plan_with_the_absent_ones_skipped():
    source = caches.parse(
        "present\t0\t~/.cache/flashinfer\n"
        "absent\t1\t~/.triton/cache\n"
        "present\t2\t/tmp/torchinductor_alice\n"
        "absent\t3\t~/.cache/vllm\n"
        "present\t9\t/nope\n"  # no such cache: ignored
        "present\t1\t~/../../etc\n"  # a path that climbs: ignored (remote text)
        "garbage line\n"
    )
    dest = caches.parse("absent\t2\t/tmp/torchinductor_bob\n")
    plan = caches.plan(source, dest)
    assert plan.copies == (
        ("flashinfer", "~/.cache/flashinfer", "~/.cache/flashinfer"),
        ("torch inductor", "/tmp/torchinductor_alice", "/tmp/torchinductor_bob"),
    )
    assert plan.skipped == (("triton", "~/.triton/cache"), ("vllm", "~/.cache/vllm"))


def test_every_cache_has_its_source_and_a_job_name_a_job_dir_can_hold():
    assert [c.name for c in caches.CACHES] == ["flashinfer", "triton", "torch inductor", "vllm"]
    for cache in caches.CACHES:
        assert " @ " in cache.source
        name = caches.job_name("x" * 64, cache.name)
        assert len(name) <= 64 and " " not in name
