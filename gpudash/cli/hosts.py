"""Which config and which hosts a command talks to: `--config`, `--replay` and host arguments.

Every command that takes host names checks them with `require_hosts`, so an unknown host reads
the same everywhere: one line naming it, the config it is not in, the nearest name, the hosts.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from gpudash.cli.errors import UsageError
from gpudash.config.model import Config, HostConfig
from gpudash.saved import load_host, saved_hosts


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
    """One replay host per saved host directory under `root` (a `gpudash probe --save` dir)."""
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory (expected a `gpudash probe --save` dir)")
    dirs = saved_hosts(root)
    if not dirs:
        raise UsageError(f"{root}: no saved hosts in it (no */meta.json)")
    hosts = []
    for directory in dirs:
        try:
            name = load_host(directory).host
        except (OSError, ValueError) as exc:
            raise UsageError(str(exc)) from None
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


def require_hosts(config: Config, names: Sequence[str]) -> list[HostConfig]:
    """The hosts `names` name, in that order and each once; no names: every host.

    The first name the config lacks is a UsageError: `unknown host 'gpu9' in FILE (did you
    mean 'gpu1'?) (hosts: gpu1, gpu2)`, the hosts in the config's order."""
    if not names:
        return list(config.hosts)
    by_name = {h.name: h for h in config.hosts}
    for name in names:
        if name not in by_name:
            # Here, not at the top: a probe of a replay dir otherwise never imports the schema.
            from gpudash.config.values import suggest

            where = config.path or "the default config"
            near = suggest(name, list(by_name))
            listed = ", ".join(by_name) or "none"
            raise UsageError(f"unknown host {name!r} in {where}{near} (hosts: {listed})")
    return [by_name[name] for name in dict.fromkeys(names)]


def with_peers(config: Config, names: Sequence[str]) -> list[str]:
    """The named hosts plus every host sharing a tag with one of them, in config order: the
    comparison checks of a host need its peers' results."""
    tags = {t for h in config.hosts if h.name in names for t in h.tags}
    return [h.name for h in config.hosts if h.name in names or tags & set(h.tags)]
