"""Hosts sharing a tag are compared: the odd one out gets a warn naming the difference."""

from __future__ import annotations

from gpudash.checks import check_fleet
from gpudash.checks.finding import Severity
from gpudash.config.load import parse_config
from tests.support.hosts import C, failed, host

OLD = {
    "query": C / "query-h200-1x-varied-old-driver.txt",
    "smi": C / "smi-h200-1x-varied-old-driver.txt",
}


def fleet(n: int, tag: str = "h200", extra: str = "") -> str:
    return "".join(f'[hosts.n{i}]\ntags = ["{tag}"]\n{extra}' for i in range(n))


def test_the_host_with_another_driver_is_named_against_the_majority():
    config = parse_config(fleet(8), "t.toml")
    results = {f"n{i}": host(name=f"n{i}") for i in range(1, 8)}
    results["n0"] = host(name="n0", gpus=OLD)
    found = check_fleet(config, results)
    odd = [f for f in found["n0"] if f.family == "compare"]
    assert [f.title for f in odd] == [
        "driver 570.124.06 here, 580.159.04 on 7 others tagged 'h200'",
        "CUDA 12.8 here, 13.0 on 7 others tagged 'h200'",
    ]
    assert all(f.severity is Severity.WARN for f in odd)
    assert odd[0].facts["group"] == {"580.159.04": 7, "570.124.06": 1}
    assert not [f for f in found["n1"] if f.family == "compare"]


def test_gpu_count_and_nvlink_summary_differences_are_named_too():
    config = parse_config(fleet(3), "t.toml")
    results = {
        "n0": host("h200-1x", name="n0"),
        "n1": host("dgx-h200", name="n1"),
        "n2": host("dgx-h200", name="n2"),
    }
    titles = [f.title for f in check_fleet(config, results)["n0"] if f.family == "compare"]
    assert titles == [
        "GPU count 1 here, 8 on 2 others tagged 'h200'",
        "NVLink single GPU: no GPU pairs here, all 28 pairs NV18 on 2 others tagged 'h200'",
    ]


def test_two_hosts_sharing_a_tag_that_differ_each_name_the_other():
    pair = parse_config(fleet(2), "t.toml")
    results = {"n0": host(name="n0", gpus=OLD), "n1": host(name="n1")}
    found = check_fleet(pair, results)
    n0 = [f for f in found["n0"] if f.family == "compare"]
    n1 = [f for f in found["n1"] if f.family == "compare"]
    assert [f.title for f in n0] == [
        "driver 570.124.06 here, 580.159.04 on n1, the other host tagged 'h200'",
        "CUDA 12.8 here, 13.0 on n1, the other host tagged 'h200'",
    ]
    assert [f.title for f in n1] == [
        "driver 580.159.04 here, 570.124.06 on n0, the other host tagged 'h200'",
        "CUDA 13.0 here, 12.8 on n0, the other host tagged 'h200'",
    ]
    assert all(f.severity is Severity.WARN for f in n0 + n1)


def test_a_1x_and_an_8x_h200_sharing_a_tag_are_told_apart():
    pair = parse_config(fleet(2), "t.toml")
    results = {"n0": host("h200-1x", name="n0"), "n1": host("dgx-h200", name="n1")}
    titles = [f.title for f in check_fleet(pair, results)["n1"] if f.family == "compare"]
    assert titles[0] == "GPU count 8 here, 1 on n0, the other host tagged 'h200'"


def test_an_expect_key_wins_over_the_pair_and_the_majority():
    expected = 'expect = { driver = "580.159.04", cuda = "13.0" }\n'
    pair = parse_config(fleet(2, extra=expected), "t.toml")
    results = {"n0": host(name="n0", gpus=OLD), "n1": host(name="n1")}
    found = check_fleet(pair, results)
    assert not [f for fs in found.values() for f in fs if f.family == "compare"]
    assert {f.code for f in found["n0"] if f.family == "expect"} >= {"expect.driver"}
    eight = parse_config(fleet(8, extra=expected), "t.toml")
    many = {f"n{i}": host(name=f"n{i}") for i in range(1, 8)} | {"n0": host(name="n0", gpus=OLD)}
    assert not [f for f in check_fleet(eight, many)["n0"] if f.family == "compare"]


def test_no_strict_majority_of_three_no_finding_and_untagged_or_failed_hosts_not_compared():
    results = {"n0": host(name="n0", gpus=OLD), "n1": host(name="n1")}
    untagged = parse_config("[hosts.n0]\n[hosts.n1]\n[hosts.n2]\n", "t.toml")
    three = {**results, "n2": host(name="n2")}
    assert not [f for f in check_fleet(untagged, three)["n0"] if f.family == "compare"]
    tagged = parse_config(fleet(3), "t.toml")
    down = {**results, "n2": failed("n2")}
    titles = [f.title for f in check_fleet(tagged, down)["n0"] if f.family == "compare"]
    assert all("on n1, the other host" in t for t in titles) and titles  # n2 is not counted
    split = {
        "n0": host(name="n0", gpus=OLD),
        "n1": host(name="n1"),
        "n2": host("h200-1x", name="n2"),
    }
    counts = [f for f in check_fleet(tagged, split)["n0"] if f.code == "compare.gpus"]
    assert counts == []  # 1, 8, 1... n0 holds the majority's count: nothing to say


def test_only_hosts_sharing_the_tag_are_the_group():
    config = parse_config(
        fleet(3, "a") + fleet(0) + '[hosts.x1]\ntags = ["b"]\n[hosts.x2]\ntags = ["b"]\n', "t.toml"
    )
    results = {f"n{i}": host(name=f"n{i}") for i in range(3)}
    results |= {"x1": host(name="x1", gpus=OLD), "x2": host(name="x2", gpus=OLD)}
    found = check_fleet(config, results)
    assert not [f for fs in found.values() for f in fs if f.family == "compare"]


# ---- one set of majorities per change (not one walk of every peer per host) -------------------

NV17 = {"topo": C / "topo-h200-8x-varied-nv17.txt"}
VARIANTS = {
    "same": lambda n: host("dgx-h200", name=n),
    "old": lambda n: host("dgx-h200", name=n, gpus=OLD),
    "nv17": lambda n: host("dgx-h200", name=n, topology=NV17),
    "down": lambda n: failed(n),
}


def test_a_fleet_check_extracts_each_hosts_traits_once_not_once_per_peer(monkeypatch):
    from gpudash.checks import compare, groups

    n = 60
    config = parse_config(fleet(n), "t.toml")
    results = {f"n{i}": host(name=f"n{i}") for i in range(n)}
    results["n7"] = host(name="n7", gpus=OLD)
    calls = []
    real = compare.traits
    for module in (compare, groups):  # the check's own traits and its groups' majorities
        monkeypatch.setattr(module, "traits", lambda r: calls.append(r.name) or real(r))
    found = check_fleet(config, results)
    assert len(calls) <= 2 * n  # was n * (n - 1) + n: every host walked every peer
    odd = [f.title for f in found["n7"] if f.family == "compare"]
    assert odd[0] == f"driver 570.124.06 here, 580.159.04 on {n - 1} others tagged 'h200'"


def test_moving_one_host_names_every_peer_whose_comparison_changed():
    """After each single-host update, re-checking only the hosts `update` names gives the
    same findings as checking the whole fleet from scratch."""
    import random

    from gpudash.checks import run_checks
    from gpudash.checks.groups import Groups

    rng = random.Random(6)
    names = [f"n{i}" for i in range(7)]
    config = parse_config(fleet(7), "t.toml")
    built = {(n, v): make(n) for n in names for v, make in VARIANTS.items()}
    groups, results, shown = Groups(), {}, {}
    for _ in range(60):
        name = rng.choice(names)
        results[name] = built[(name, rng.choice(list(VARIANTS)))]
        affected = groups.update(name, ["h200"], results[name])
        for other in [name, *affected]:
            if other in results:
                shown[other] = run_checks(results[other], config.host(other), (), None, groups)
        truth = check_fleet(config, results)
        assert {k: shown[k] for k in truth} == truth
