"""A checked spec plus what the probe knows about one host -> the exact script to send.

`prepare` is pure (it reads only the local patch files a spec names): the same inputs give the
same script, which is what a confirmation shows and what the host runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from gpudash.checks.facts import FACTS_DATE
from gpudash.checks.stack import choose_torch
from gpudash.tasks import render
from gpudash.tasks.copy.scripts import preview as copy_preview
from gpudash.tasks.spec import TaskSpec

if TYPE_CHECKING:
    from gpudash.model import HostResult


class PrepareError(ValueError):
    """The task cannot be made for this host (e.g. cuda = "auto" with no GPU facts)."""


@dataclass(frozen=True)
class Facts:
    """What the probe said that task defaults depend on. `ccs` has one entry per GPU, None
    where the GPU's compute capability is unknown (a GPU host is never taken for a CPU one)."""

    driver_cuda: str | None = None
    ccs: tuple[str | None, ...] = ()
    known: bool = False
    driver_version: str | None = None
    gpus: int | None = None
    """How many GPUs the driver lists (verify compares CUDA's count with it)."""
    sites: tuple[tuple[str, bool, str], ...] = ()
    """The probe's network check, per named site: (host, reached, why not). Empty when it
    did not look (or named only IP literals, which say nothing about the internet)."""
    broken: tuple[int, ...] = ()
    """Positions in `ccs` of GPUs nvidia-smi shows in error (ERR!): the torch choice may
    leave them out when the others are one model (gpudash.checks.stack.choose_torch)."""

    @classmethod
    def from_result(cls, result: HostResult | None) -> Facts:
        """From a `gpudash.model.HostResult` (its `gpus` and `network` sections), or unknown."""
        sites = _sites(result.data("network")) if result is not None else ()
        gpus = result.data("gpus") if result is not None else None
        if gpus is None:
            return cls(sites=sites)
        listed = tuple(getattr(gpus, "gpus", ()))
        ccs = tuple(g.cc or None for g in listed)
        return cls(
            getattr(gpus, "cuda_version", None),
            ccs,
            known=True,
            driver_version=getattr(gpus, "driver_version", None),
            gpus=len(ccs) if getattr(gpus, "source", "none") != "none" else None,
            sites=sites,
            broken=tuple(i for i, g in enumerate(listed) if getattr(g, "error", False)),
        )


def _sites(network: object) -> tuple[tuple[str, bool, str], ...]:
    out = []
    for t in getattr(network, "targets", ()):
        if not t.host or t.dns_ok is None:
            continue  # an IP literal (a test's 127.0.0.1): nothing about the internet
        why = "name resolution failed" if t.dns_ok is False else (t.error or "no answer")
        out.append((t.host, bool(t.ok), why))
    return tuple(out)


DOWNLOADS: Mapping[str, tuple[str, ...]] = {
    "uv": ("pypi.org", "files.pythonhosted.org", "astral.sh", "github.com"),
    "pip": ("pypi.org", "files.pythonhosted.org"),
    "torch": ("download.pytorch.org",),
    "serving": ("pypi.org", "files.pythonhosted.org", "download.pytorch.org"),
}
"""Kinds that fetch from the internet unless an index or local wheels are given, and the
sites they fetch from (the uv kind: pip from PyPI, else astral.sh's installer from GitHub)."""


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
    if spec.kind not in DOWNLOADS:
        return
    params = spec.params
    if params.get("index_url") or params.get("find_links") or params.get("no_index"):
        return  # a mirror or local wheels: the public internet is not needed
    sites = DOWNLOADS[spec.kind]
    if spec.kind == "torch":  # its own index, a mirror included
        sites = (urlsplit(str(params.get("index") or "")).hostname or sites[0],)
    cause = offline(sites, facts)
    if cause is None:
        return
    way = "set https_proxy" + (", or install uv by hand" if spec.kind == "uv" else "")
    if spec.kind == "pip":
        way += ", or use params.index_url / find_links"
    raise PrepareError(f"{spec.name}: {cause} (the probe's network check): {way}")


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


@dataclass(frozen=True)
class TorchPick:
    tag: str  # "cu126", "cpu"
    release: str | None  # "2.14" when chosen from the facts; None: left to the index
    why: str  # one line for --show


def _pick(spec: TaskSpec, facts: Facts) -> TorchPick:
    """The index (and torch release) for this host: from PyTorch's build matrix, the newest
    release with a variant that runs on every GPU under the driver; pins narrow it and are
    refused with the reason when the pinned build cannot run here."""
    value = spec.params.get("cuda", "auto")
    pin_torch = str(spec.params.get("torch") or "") or None
    if value == "cpu":
        return TorchPick("cpu", None, "cuda = cpu (set)")
    if not facts.known:
        if value == "auto":
            raise PrepareError(
                f'{spec.name}: cuda = "auto" needs the gpus probe of the host; set cuda'
            )
        return TorchPick(value, None, f"cuda = {value} (set; no gpus probe to check it against)")
    if not facts.ccs:
        if value == "auto":
            return TorchPick("cpu", None, "cuda = cpu (the probe found no GPU)")
        return TorchPick(value, None, f"cuda = {value} (set; the probe found no GPU)")
    pin_cuda = None if value == "auto" else value
    choice = choose_torch(
        facts.driver_version,
        facts.ccs,
        pin_torch,
        pin_cuda,
        reported_cuda=facts.driver_cuda,
        broken=facts.broken,
    )
    if choice.build is not None:
        return TorchPick(choice.build.variant, choice.build.release, choice.why)
    if choice.verdict is None and pin_cuda and choice.why.startswith("no torch build in"):
        # A pinned build gpudash has no facts about: not refused (it may well run), said so.
        return TorchPick(
            pin_cuda, None, f"cuda = {pin_cuda} (set; not in gpudash's facts of {FACTS_DATE})"
        )
    raise PrepareError(f"{spec.name}: {choice.why}")


def _pin_torch(packages: object, release: str) -> tuple[str, ...]:
    """`torch` without a version becomes `torch==2.14.*`: the release the choice was for."""
    out = []
    for entry in packages if isinstance(packages, (list, tuple)) else (packages,):
        text = str(entry)
        out.append(f"torch=={release}.*" if text.strip() == "torch" else text)
    return tuple(out)


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
        pick = _pick(spec, facts)
        params["cuda"] = pick.tag
        notes.append(pick.why)
        if spec.kind == "torch":
            params["torch"] = pick.release or params.get("torch") or ""
            if pick.release:
                params["packages"] = _pin_torch(params["packages"], pick.release)
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
    if spec.kind == "verify":  # the program travels with the job; see gpudash/tasks/verify
        from gpudash.tasks.verify import PROGRAM

        files["program.py"] = PROGRAM.read_text(encoding="utf-8")
        if facts.gpus is not None:
            params["expect_gpus"] = str(facts.gpus)

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
        if spec.params.get("caches"):
            script += (
                "# then, caches = true: each JIT cache the source has (FlashInfer, Triton, torch"
                " inductor, vLLM;\n# gpudash/tasks/copy/caches.py) as its own verified copy\n"
            )
    if spec.kind == "model" and spec.params.get("from"):  # gpudash/tasks/copy/peer.py
        source = spec.params.get("from")
        script = (
            f"# model {spec.params.get('repo')}: copied from {source} (params.from), not"
            f" downloaded\n# on {source}: the folder {params.get('dir')}/REPO, else the Hugging"
            " Face cache's models--ORG--NAME\n"
            "# then the copy task's verified copy of that folder to the same place here\n"
        )
        notes.append(f"copied from {spec.params.get('from')}, not downloaded")
    check = render.check_script(env, spec.check, paths=paths) if spec.check else None
    return Prepared(spec, script, check, secrets, files, tuple(notes))
