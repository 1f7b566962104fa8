"""Which config and which hosts a command talks to: `--config`, `--replay` and host arguments.

Every command that takes hosts selects them with `select_hosts`, so selection reads the same
everywhere. A HOST argument is one of:
  - a configured host's name;
  - a shell-style glob over the names (`'b300-*'`, `'gpu[1-4]'`: fnmatch, case-sensitive);
  - an ad-hoc target `user@host[:port]` (or `host:port`) that no config entry names: reached
    with the config's [defaults]-free settings and ~/.ssh/config, as `ssh user@host` would.
`--tag TAG` (repeatable) adds every host carrying any of the tags. An unknown name, a glob or
tag that matches nothing: one line naming it, the config, the nearest name, the choices.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path

from gpudash.cli.errors import UsageError
from gpudash.config.model import Config, HostConfig
from gpudash.text import clean_line


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """`--config` accepted after the subcommand too (`gpudash probe --config x.toml`)."""
    parser.add_argument("--config", dest="sub_config", metavar="PATH", help=argparse.SUPPRESS)


def load(args: argparse.Namespace) -> Config:
    """The config the user named (before or after the subcommand), or the default lookup."""
    from gpudash.config.load import load_config

    return load_config(_named_config(args))


def _named_config(args: argparse.Namespace) -> str | None:
    named: str | None = getattr(args, "sub_config", None) or args.config
    return named


def replay_config(root: Path) -> Config:
    """One replay host per saved host directory under `root` (a `gpudash probe --save` dir),
    or the one host `root` itself is (`DIR/HOST`, as a colleague sends one host's capture).

    `gpudash.saved` is imported here, not at the top: a probe that saves nothing and replays
    nothing does not pay for it before its first connection."""
    from gpudash.saved import load_host, saved_hosts

    if not root.is_dir():
        raise UsageError(f"{root}: no such directory (expected a `gpudash probe --save` dir)")
    dirs = [root] if (root / "meta.json").is_file() else saved_hosts(root)
    if not dirs:
        raise UsageError(
            f"{root}: no saved hosts in it (no meta.json, no */meta.json: "
            "expected a `gpudash probe --save` dir or one host's dir in it)"
        )
    hosts = []
    seen: dict[str, Path] = {}
    for directory in dirs:
        try:
            # The label is the capture's own word: cleaned (no OSC 52, no U+202E) and capped.
            name = clean_line(load_host(directory).host)[:200] or directory.name
        except (OSError, ValueError) as exc:
            raise UsageError(clean_line(str(exc))) from None
        if name in seen:
            raise UsageError(f"{directory} and {seen[name]} both say they are host {name!r}")
        seen[name] = directory
        hosts.append(
            HostConfig(name=name, transport="replay", address=name, replay_dir=str(directory))
        )
    return Config(path=str(root), hosts=tuple(hosts))


def replayed(args: argparse.Namespace) -> Config:
    """The config of a command with `--replay DIR` (check, report): the captures alone, or,
    with a config named as well (--config or $GPUDASH_CONFIG), that config's hosts that have
    a capture in DIR, replayed from it with their tags and expectations."""
    if not args.replay:
        return load(args)
    saved = replay_config(Path(args.replay))
    if not (_named_config(args) or os.environ.get("GPUDASH_CONFIG")):
        return saved
    config = load(args)
    dirs = {h.name: h.replay_dir for h in saved.hosts}
    hosts = tuple(
        dataclasses.replace(h, transport="replay", replay_dir=dirs[h.name])
        for h in config.hosts
        if h.name in dirs
    )
    if not hosts:
        raise UsageError(f"{args.replay}: no capture for any host of {config.path}")
    return dataclasses.replace(config, hosts=hosts)


def add_selection(parser: argparse.ArgumentParser, *, hosts: bool = True) -> None:
    """The HOST arguments (names, globs, ad-hoc targets) and `--tag TAG`, repeatable: every
    host carrying any of the tags. The same words on every command that takes hosts."""
    if hosts:
        parser.add_argument(
            "hosts", nargs="*", metavar="HOST", help="names, globs, user@host[:port] (default: all)"
        )
    parser.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=[],
        metavar="TAG",
        help="hosts carrying this tag (repeatable: any of them)",
    )
    parser.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="trust a host key seen for the first time (recorded in known_hosts, its"
        " fingerprint printed); a changed key is still refused",
    )


_GLOB = re.compile(r"[*?\[]")
_TARGET = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>[A-Za-z0-9_.-]+)(?::(?P<port>\d{1,5}))?$")


def _target(word: str) -> HostConfig | None:
    """An ad-hoc `user@host[:port]` / `host:port` target, or None when `word` is not one."""
    if "@" not in word and ":" not in word:
        return None
    match = _TARGET.match(word)
    if match is None:
        return None
    port = int(match["port"]) if match["port"] else None
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"{word!r}: port {port} is out of range (1-65535)")
    return HostConfig(name=word, address=match["host"], user=match["user"], port=port)


def select_hosts(
    config: Config, names: Sequence[str], tags: Sequence[str] = (), *, accept_new: bool = False
) -> tuple[Config, list[HostConfig]]:
    """The hosts `names` and `tags` select (no names and no tags: every host), each once:
    named ones in the order given, a glob's or tag's matches in config order. The config
    comes back with the ad-hoc targets added, so the fleet can reach them by name.
    `accept_new` (`--accept-new-host-key`): `accept_new_keys` on the selected hosts."""
    config, hosts = _select(config, names, tags)
    return accept_new_keys(config, hosts) if accept_new else (config, hosts)


def accept_new_keys(config: Config, hosts: list[HostConfig]) -> tuple[Config, list[HostConfig]]:
    """The selected hosts under `host_key_policy = "accept-new"` for this command (those set
    to "strict"; "insecure" stays as configured), and each key recorded is said on stderr
    with its fingerprint: an ad-hoc `user@host` has no config to set the policy in."""
    import logging
    import sys

    changed = {
        h.name: dataclasses.replace(h, host_key_policy="accept-new")
        for h in hosts
        if h.host_key_policy == "strict"
    }
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("gpudash: %(message)s"))
    handler.addFilter(lambda record: " recorded " in record.getMessage())
    logger = logging.getLogger("gpudash.transport.ssh")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    config = dataclasses.replace(config, hosts=tuple(changed.get(h.name, h) for h in config.hosts))
    return config, [changed.get(h.name, h) for h in hosts]


def _select(
    config: Config, names: Sequence[str], tags: Sequence[str], *, tag_flag: bool = True
) -> tuple[Config, list[HostConfig]]:
    if not names and not tags:
        return config, list(config.hosts)
    by_name = {h.name: h for h in config.hosts}
    where = config.path or "the default config"
    chosen: dict[str, HostConfig] = {}
    extra: list[HostConfig] = []
    for name in names:
        if name in by_name:
            chosen.setdefault(name, by_name[name])
        elif _GLOB.search(name):
            matched = [h for h in config.hosts if fnmatch.fnmatchcase(h.name, name)]
            if not matched:
                listed = ", ".join(by_name) or "none"
                raise UsageError(f"no host in {where} matches {name!r} (hosts: {listed})")
            for host in matched:
                chosen.setdefault(host.name, host)
        elif (target := _target(name)) is not None:
            if name not in chosen:
                chosen[name] = target
                extra.append(target)
        elif tagged := [h.name for h in config.hosts if name in h.tags]:  # not "b300-04?"
            if tag_flag:
                raise UsageError(f"{name!r} is a tag, not a host: --tag {name}")
            raise UsageError(f"{name!r} is a tag, not a host ({', '.join(tagged)}): name one")
        else:
            raise UsageError(_unknown("host", name, list(by_name), where))
    known_tags = list(dict.fromkeys(t for h in config.hosts for t in h.tags))
    for tag in tags:
        members = [h for h in config.hosts if tag in h.tags]
        if not members:
            raise UsageError(_unknown("tag", tag, known_tags, where))
        for host in members:
            chosen.setdefault(host.name, host)
    if extra:
        config = dataclasses.replace(config, hosts=(*config.hosts, *extra))
    return config, list(chosen.values())


def _unknown(what: str, word: str, choices: list[str], where: str) -> str:
    # Here, not at the top: a probe of a replay dir otherwise never imports the schema.
    from gpudash.config.values import suggest

    listed = ", ".join(choices) or "none"
    near = suggest(word, choices)
    if not near and what == "host":
        near = " (an ad-hoc target is user@host[:port])"
    return f"unknown {what} {word!r} in {where}{near} ({what}s: {listed})"


def require_hosts(config: Config, names: Sequence[str]) -> list[HostConfig]:
    """The configured hosts `names` name or match (see `select_hosts`); no names: every host.
    Ad-hoc targets are refused here: a caller that can reach them uses `select_hosts`."""
    widened, hosts = select_hosts(config, names)
    if widened is not config:
        adhoc = next(h.name for h in hosts if config.host(h.name) is None)
        where = config.path or "the default config"
        raise UsageError(_unknown("host", adhoc, [h.name for h in config.hosts], where))
    return hosts


def one_host(config: Config, name: str) -> tuple[Config, HostConfig]:
    """The one host a single-host command (report, tasks HOST) names: a name, a glob that
    matches exactly one host, or an ad-hoc target."""
    config, hosts = _select(config, [name], (), tag_flag=False)
    if len(hosts) != 1:
        listed = ", ".join(h.name for h in hosts)
        raise UsageError(f"{name!r} matches {len(hosts)} hosts ({listed}): name one")
    return config, hosts[0]


def with_peers(config: Config, names: Sequence[str]) -> list[str]:
    """The named hosts plus every host sharing a tag with one of them, in config order: the
    comparison checks of a host need its peers' results."""
    tags = {t for h in config.hosts if h.name in names for t in h.tags}
    return [h.name for h in config.hosts if h.name in names or tags & set(h.tags)]
