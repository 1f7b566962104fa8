"""The pure rules of hostname canonicalization (gpudash/transport/sshcanon.py), each as
OpenSSH's code states it (openssh-portable V_9_9_P2: match.c match_pattern_list, ssh.c
check_follow_cname, readconf.c CanonicalizePermittedCNAMEs/CanonicalDomains, misc.c
valid_domain). The behaviour end to end, against `ssh -G` and a real ssh, is in
tests/ssh/test_ssh_canonicalize.py."""

from __future__ import annotations

import re

import pytest

from gpudash.transport.sshcanon import (
    Canon,
    ResolveError,
    domain_problem,
    follow_cname,
    is_addr_fast,
    match_pattern_list,
    mode_of,
    numeric_address,
    parse_cnames,
    parse_domains,
)


@pytest.mark.parametrize(
    ("string", "patterns", "expected"),
    [
        ("gpu8.example.internal", "*.example.internal", 1),
        ("gpu8.example.internal", "*.example.com,*.internal", 1),
        ("gpu8.example.internal", "*.example.com", 0),
        ("gpu8.example.internal", "!gpu8.*,*.internal", -1),  # a negated match wins
        ("gpu8.example.internal", "gpu?.example.internal", 1),
        ("gpu10.example.internal", "gpu?.example.internal", 0),
        ("a[1].x", "a[1].x", 1),  # no character classes in OpenSSH patterns
        ("gpu8", "GPU8", 1),  # dolower: the pattern is lowercased, not the string
        ("GPU8", "gpu8", 0),
    ],
)
def test_pattern_lists_match_as_openssh_match_pattern_list(string, patterns, expected):
    assert match_pattern_list(string, patterns) == expected


RULES = Canon(mode="yes", cnames=(("*.example.internal", "*.example.com"),))


@pytest.mark.parametrize(
    ("canon", "direct", "cname", "expected"),
    [
        (RULES, True, "real.example.com", "real.example.com"),
        (RULES, True, "real.other.org", "gpu8.example.internal"),  # no rule allows it
        (RULES, True, "", "gpu8.example.internal"),  # the resolver gave no CNAME
        (RULES, False, "real.example.com", "gpu8.example.internal"),  # proxied under yes
        (Canon(mode="always", cnames=RULES.cnames), False, "real.example.com", "real.example.com"),
        (Canon(mode="no", cnames=RULES.cnames), True, "real.example.com", "gpu8.example.internal"),
        (Canon(mode="yes"), True, "real.example.com", "gpu8.example.internal"),  # no rules
    ],
)
def test_a_cname_replaces_the_name_only_where_check_follow_cname_allows(
    canon, direct, cname, expected
):
    assert follow_cname("gpu8.example.internal", cname, canon, direct=direct) == expected


def test_permitted_cnames_parse_as_readconf_does():
    assert parse_cnames(["*"]) == (("*", "*"),)
    assert parse_cnames(["*.A.internal:*.B.com,x"]) == (("*.a.internal", "*.b.com,x"),)
    for bad in ("*.a.internal", "*.a.internal:"):
        with pytest.raises(ResolveError, match=re.escape(f'PermittedCNAMEs "{bad}"')):
            parse_cnames([bad])


def test_canonical_domains_are_lowercased_and_checked():
    assert parse_domains(["Example.Internal", "none"]) == ("example.internal", "none")
    with pytest.raises(ResolveError, match="contains invalid characters"):
        parse_domains(["exa mple.internal"])


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("gpu8.example.internal", None),
        ("under_score.example", None),  # "technically invalid, but common" (misc.c)
        ("", "empty domain name"),
        ("-gpu.example", "starts with invalid character"),
        ("gpu..example", "consecutive separators"),
        ("gpu8/x", "contains invalid characters"),
    ],
)
def test_domain_names_are_checked_as_valid_domain_does(name, problem):
    found = domain_problem(name)
    assert (found is None) if problem is None else (problem in (found or ""))


def test_addresses_are_told_from_names_as_ssh_does():
    assert is_addr_fast("10.0.0.1") and is_addr_fast("fe80::1") and is_addr_fast("h%eth0")
    assert not is_addr_fast("gpu8")
    assert numeric_address("127.0.0.1", Canon()) == "127.0.0.1"
    assert numeric_address("::1", Canon()) == "::1"
    assert numeric_address("gpu8", Canon()) is None  # a name is never looked up here


def test_canonicalize_hostname_values_map_from_asyncssh():
    assert [mode_of(v) for v in (False, True, "always", None)] == ["no", "yes", "always", "no"]
