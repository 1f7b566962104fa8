"""Env: is there uv, a venv, a serving engine, and a Python new enough for the serving stack?

SGLang and vLLM need Python >= 3.10 (vLLM's install docs: 3.10-3.13; SGLang's pyproject:
requires-python >= 3.10).
"""

from __future__ import annotations

from gpudash.checks.context import Context
from gpudash.checks.finding import Finding, Severity
from gpudash.versions import at_least, short

MIN_PYTHON = (3, 10)
ENGINES = ("sglang", "vllm")


def check(ctx: Context) -> list[Finding]:
    env = ctx.env
    if env is None:
        return []
    out: list[Finding] = []
    if env.uv is None:
        out.append(
            Finding(
                Severity.WARN,
                "env.no_uv",
                "no uv on the host",
                why="uv creates venvs with the right Python and installs torch/SGLang/vLLM in "
                "seconds instead of minutes; the other bootstrap tasks use it.",
                fix="Install uv.",
                fix_task="uv",
            )
        )
    if not env.venvs:
        out.append(
            Finding(
                Severity.WARN,
                "env.no_venv",
                "no virtual environment found",
                why="Installing the serving stack into the system Python breaks the OS's "
                "packages (PEP 668) and cannot be pinned per host.",
                fix="Create a venv for serving (or add where yours live to venv_paths).",
                facts={"venv_paths": list(ctx.host.venv_paths) if ctx.host else []},
                fix_task="venv",
            )
        )
    need = short(MIN_PYTHON)
    for venv in env.venvs:
        if venv.python and at_least(venv.python, MIN_PYTHON) is False:
            out.append(
                Finding(
                    Severity.WARN,
                    "env.python_too_old",
                    f"venv {venv.path} has Python {venv.python}; SGLang and vLLM need >= {need}",
                    why="pip finds no SGLang/vLLM release for it, or an ancient one.",
                    fix=f"Create a new venv with Python >= {need} (uv venv --python 3.12).",
                    facts={"venv": venv.path, "python": venv.python, "needs": need},
                    fix_task="venv",
                )
            )
    pythons = [v.python for v in env.venvs] + [p.version for p in env.pythons]
    found = list(dict.fromkeys(v for v in pythons if v))
    if not any(at_least(v, MIN_PYTHON) for v in found):
        out.append(
            Finding(
                Severity.WARN,
                "env.python_too_old",
                f"no Python >= {need} on the host (have: {', '.join(found) or 'none'})",
                why="SGLang and vLLM do not install on older Pythons.",
                fix="Let uv fetch one: the venv task runs `uv venv --python 3.12`.",
                facts={"pythons": found, "needs": need},
                fix_task="venv",
            )
        )
    if env.venvs and not any(e in v.packages for v in env.venvs for e in ENGINES):
        out.append(
            Finding(
                Severity.INFO,
                "env.no_serving_engine",
                "neither SGLang nor vLLM is installed in any venv",
                why="Nothing can serve a model yet.",
                fix="Install SGLang (with FlashInfer) or vLLM into the serving venv.",
                fix_task="serving",
            )
        )
    if not out:
        out.append(
            Finding(
                Severity.OK,
                "env.ok",
                f"uv {(env.uv.version if env.uv else None) or ''} and {len(env.venvs)} venv(s)"
                f" with Python >= {need}",
            )
        )
    return out
