"""A checked spec plus what the probe knows about one host -> the exact script to send.

`prepare` is pure (it reads only the local patch files a spec names): the same inputs give the
same script, which is what a confirmation shows and what the host runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gpudash.tasks import render
from gpudash.tasks.facts import Facts, PrepareError
from gpudash.tasks.kinds import KINDS, Draft
from gpudash.tasks.spec import TaskSpec

__all__ = ["DOWNLOADS", "Facts", "PrepareError", "Prepared", "offline", "prepare"]


DOWNLOADS: Mapping[str, tuple[str, ...]] = {
    name: kind.downloads for name, kind in KINDS.items() if kind.downloads
}
"""Kinds that fetch from the internet unless an index or local wheels are given, and the
sites they fetch from (each kind's `downloads`)."""


def offline(sites: Iterable[str], facts: Facts) -> str | None:
    """Why `kind` cannot download on this host, from the probe's network check: every site
    it needs that the probe tried failed; or, where the probe tried none of them, every
    site it tried (two or more) failed to resolve, which is no DNS at all. None otherwise
    (unknown is not offline)."""
    needed = set(sites)
    tried = [s for s in facts.sites if s[0] in needed]
    if not tried:
        dead = [s for s in facts.sites if not s[1] and s[2] == "name resolution failed"]
        if len(facts.sites) < 2 or len(dead) < len(facts.sites):
            return None
        tried = dead
    if any(reached for _, reached, _ in tried):
        return None
    hosts = ", ".join(dict.fromkeys(host for host, _, _ in tried))
    whys = list(dict.fromkeys(why for _, _, why in tried))
    return f"cannot reach {hosts}: {whys[0]}"


def _check_network(spec: TaskSpec, facts: Facts) -> None:
    kind = spec.kind_def
    sites = kind.download_sites(spec.params)
    if not sites:
        return  # nothing from the internet, or a mirror or local wheels
    cause = offline(sites, facts)
    if cause is not None:
        raise PrepareError(f"{spec.name}: {cause} (the probe's network check): {kind.offline_way}")


@dataclass(frozen=True)
class Prepared:
    spec: TaskSpec
    script: str
    check: str | None
    secrets: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        """The script as a confirmation shows it: secrets as masked export lines."""
        return render.shown(self.script, self.secrets)

    @property
    def secrets_env(self) -> str:
        return render.secrets_env(self.secrets)


HF_TOKEN_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
"""The HF token's variables (huggingface_hub `constants.py`): masked in every log even when no
task names them, since the hub's own tools print what they find there."""


def configured_secrets(
    specs: Iterable[TaskSpec], environ: Mapping[str, str] = os.environ
) -> tuple[str, ...]:
    """The values of every secret any task names, and of the HF token: what a log of a job
    found after a restart must mask, when it is no longer known which task's run wrote it."""
    names = dict.fromkeys([*HF_TOKEN_VARS, *(n for spec in specs for n in spec.secrets)])
    return tuple(environ[name] for name in names if environ.get(name))


def _var(name: str) -> str:
    return "GPUDASH_" + name.upper()


def _names(specs: tuple[str, ...]) -> str:
    return " ".join(re.split(r"[\[=<>!~ ]", s, maxsplit=1)[0] for s in specs)


def prepare(
    spec: TaskSpec, facts: Facts | None = None, environ: Mapping[str, str] = os.environ
) -> Prepared:
    facts = facts or Facts()
    _check_network(spec, facts)
    kind = spec.kind_def
    draft = Draft(spec, dict(spec.params), kind.body)
    if kind.prepare is not None:
        kind.prepare(draft, facts)
    paths = [_var(n) for n, p in kind.params.items() if p.type == "path"]

    env: dict[str, str] = {}
    for name, value in draft.params.items():
        if isinstance(value, bool):
            env[_var(name)] = "1" if value else "0"
        elif isinstance(value, (tuple, list)):
            env[_var(name)] = "\n".join(str(v) for v in value)
        elif value is not None:
            env[_var(name)] = str(value)
    packages = draft.params.get("packages")
    if packages is not None:
        listed = packages if isinstance(packages, (list, tuple)) else (packages,)
        env["GPUDASH_PACKAGE_NAMES"] = _names(tuple(str(p) for p in listed))
    env.update(spec.env)

    secrets = {name: environ[name] for name in spec.secrets if environ.get(name)}
    notes = draft.notes
    for name in spec.secrets:
        if name not in secrets:
            notes.append(f"secret {name} is not set here: the host's own login is used")
    script = render.task_script(env, draft.body, paths=paths)
    if kind.preview is not None:  # not one shell script: what each part runs
        script = kind.preview(spec, draft) or script
    check = render.check_script(env, spec.check, paths=paths) if spec.check else None
    return Prepared(spec, script, check, secrets, draft.files, tuple(notes))
