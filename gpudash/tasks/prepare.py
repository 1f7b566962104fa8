"""A checked spec plus what the probe knows about one host -> the exact script to send.

`prepare` is pure (it reads only the local patch files a spec names): the same inputs give the
same script, which is what a confirmation shows and what the host runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpudash.tasks import render
from gpudash.tasks.copy.scripts import preview as copy_preview
from gpudash.tasks.kinds import NoCudaTag, pick_cuda_tag
from gpudash.tasks.spec import TaskSpec

if TYPE_CHECKING:
    from gpudash.model import HostResult


class PrepareError(ValueError):
    """The task cannot be made for this host (e.g. cuda = "auto" with no GPU facts)."""


@dataclass(frozen=True)
class Facts:
    """What the probe said that task defaults depend on."""

    driver_cuda: str | None = None
    ccs: tuple[str, ...] = ()
    known: bool = False
    offline: str | None = None
    """Why the probe's network check reached none of the named sites ("cannot reach pypi.org,
    github.com: name resolution failed"), or None when it reached one or did not look."""

    @classmethod
    def from_result(cls, result: HostResult | None) -> Facts:
        """From a `gpudash.model.HostResult` (its `gpus` and `network` sections), or unknown."""
        offline = _offline(result.data("network")) if result is not None else None
        gpus = result.data("gpus") if result is not None else None
        if gpus is None:
            return cls(offline=offline)
        ccs = tuple(g.cc for g in getattr(gpus, "gpus", ()) if g.cc)
        return cls(getattr(gpus, "cuda_version", None), ccs, known=True, offline=offline)


def _offline(network: object) -> str | None:
    """One line when every named target failed (IP literals, e.g. a test's 127.0.0.1, say
    nothing about the internet): the DNS failure when that is what it was, else the first
    error. None when any target answered, or none is named."""
    named = [t for t in getattr(network, "targets", ()) if t.host and t.dns_ok is not None]
    if not named or any(t.ok for t in named):
        return None
    hosts = ", ".join(dict.fromkeys(t.host for t in named))
    if all(t.dns_ok is False for t in named):
        why = "name resolution failed"
    else:
        why = next((t.error for t in named if t.error), None) or "no answer"
    return f"cannot reach {hosts}: {why}"


DOWNLOADS = ("uv", "pip", "torch", "serving")
"""Kinds that fetch from the internet (PyPI, astral.sh, download.pytorch.org) unless an index
or local wheels are given: on a host the probe found offline they stop before sending."""


def _check_network(spec: TaskSpec, facts: Facts) -> None:
    if facts.offline is None or spec.kind not in DOWNLOADS:
        return
    params = spec.params
    if params.get("index_url") or params.get("find_links") or params.get("no_index"):
        return  # a mirror or local wheels: the public internet is not needed
    way = "set https_proxy" + (", or install uv by hand" if spec.kind == "uv" else "")
    if spec.kind == "pip":
        way += ", or use params.index_url / find_links"
    raise PrepareError(f"{spec.name}: {facts.offline} (the probe's network check): {way}")


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


def _var(name: str) -> str:
    return "GPUDASH_" + name.upper()


def _names(specs: tuple[str, ...]) -> str:
    return " ".join(re.split(r"[\[=<>!~ ]", s, maxsplit=1)[0] for s in specs)


def _cuda(spec: TaskSpec, facts: Facts) -> str:
    value = spec.params.get("cuda", "auto")
    if value != "auto":
        return value
    if not facts.known:
        raise PrepareError(f'{spec.name}: cuda = "auto" needs the gpus probe of the host; set cuda')
    try:
        return pick_cuda_tag(facts.driver_cuda, list(facts.ccs))
    except NoCudaTag as exc:
        raise PrepareError(f"{spec.name}: {exc}") from None


def prepare(
    spec: TaskSpec, facts: Facts | None = None, environ: Mapping[str, str] = os.environ
) -> Prepared:
    facts = facts or Facts()
    _check_network(spec, facts)
    kind = spec.kind_def
    params = dict(spec.params)
    env: dict[str, str] = {}
    files: dict[str, str] = {}
    notes: list[str] = []
    paths = [_var(n) for n, p in kind.params.items() if p.type == "path"]
    body = kind.body

    if spec.kind in ("torch", "serving"):
        tag = _cuda(spec, facts)
        params["cuda"] = tag
        if spec.params.get("cuda") == "auto":
            ccs = ", ".join(facts.ccs) or "-"
            notes.append(f"cuda = {tag} (driver CUDA {facts.driver_cuda}, cc {ccs})")
    if spec.kind == "torch":
        index = str(params.pop("index")).rstrip("/")
        params["index_url"] = f"{index}/{params['cuda']}"
    if spec.kind == "serving":
        extra = "[all]" if params["engine"] == "sglang" else ""
        version = params.pop("version") or ""
        pin = version if not version or version[0] in "=<>!~" else f"=={version}"
        params["packages"] = (f"{params['engine']}{extra}{pin}",)
        params["torch_backend"] = params.pop("cuda")
        params["cuda"] = params["torch_backend"]
    if spec.kind == "patch":
        for index, path in enumerate(params.pop("patches")):
            base = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path)).lstrip("._-") or "p"
            if not base.endswith(".patch"):
                base += ".patch"
            try:
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    files[f"{index:02d}-{base}"] = f.read()
            except OSError as exc:
                raise PrepareError(f"{spec.name}: cannot read {path}: {exc.strerror}") from None
    if spec.kind == "script":
        body = spec.run or ""

    for name, value in params.items():
        if isinstance(value, bool):
            env[_var(name)] = "1" if value else "0"
        elif isinstance(value, (tuple, list)):
            env[_var(name)] = "\n".join(str(v) for v in value)
        elif value is not None:
            env[_var(name)] = str(value)
    if "packages" in params:
        env["GPUDASH_PACKAGE_NAMES"] = _names(tuple(params["packages"]))
    env.update(spec.env)

    secrets = {name: environ[name] for name in spec.secrets if environ.get(name)}
    for name in spec.secrets:
        if name not in secrets:
            notes.append(f"secret {name} is not set here: the host's own login is used")
    script = render.task_script(env, body, paths=paths)
    if spec.kind == "copy":  # gpudash streams it: show what each end runs
        script = copy_preview(spec.params)
    check = render.check_script(env, spec.check, paths=paths) if spec.check else None
    return Prepared(spec, script, check, secrets, files, tuple(notes))
