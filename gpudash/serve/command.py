"""The engine's command line, exactly as its users type it (issue 29), and how it is shown.

Pure and stdlib-only: it travels to the host with the supervisor (which knows the port only
there, when params.port = "auto"), and gpudash imports it for the confirmation's preview.

    sglang:       VENV/bin/python -m sglang.launch_server --model-path MODEL --tp TP
                  --host 127.0.0.1 --port PORT --served-model-name NAME ARGS...
    vllm:         VENV/bin/vllm serve MODEL --tensor-parallel-size TP --host 127.0.0.1
                  --port PORT --served-model-name NAME ARGS...
    transformers: VENV/bin/transformers serve MODEL --host 127.0.0.1 --port PORT
                  --device DEVICE ARGS...
transformers 5.17 takes the model as its one positional argument and has no served-name flag
(`transformers serve --help` of 5.17.0): there the name clients ask for is MODEL as given.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

ENGINES = ("sglang", "vllm", "transformers")
HOST = "127.0.0.1"
"""Engines listen on loopback only: clients reach them through SSH, never the open network."""


def default_name(engine: str, model: str) -> str:
    """The served model name when params.name is "": the model's last path part (its hub id's
    name); for transformers the model as given, since that is the only name it answers to."""
    if engine == "transformers":
        return model
    return model.rstrip("/").rsplit("/", 1)[-1] or model


def argv(
    engine: str,
    venv: str,
    model: str,
    *,
    port: int | str,
    tp: int = 1,
    name: str = "",
    device: str = "cpu",
    args: Sequence[str] = (),
) -> list[str]:
    """The engine's argv. `venv` is the venv's directory (already expanded on the host)."""
    venv = venv.rstrip("/") or "/"
    served = name or default_name(engine, model)
    if engine == "sglang":
        head = [f"{venv}/bin/python", "-m", "sglang.launch_server", "--model-path", model]
        head += ["--tp", str(tp), "--host", HOST, "--port", str(port)]
        head += ["--served-model-name", served]
    elif engine == "vllm":
        head = [f"{venv}/bin/vllm", "serve", model, "--tensor-parallel-size", str(tp)]
        head += ["--host", HOST, "--port", str(port), "--served-model-name", served]
    elif engine == "transformers":
        head = [f"{venv}/bin/transformers", "serve", model, "--host", HOST]
        head += ["--port", str(port), "--device", device]
    else:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return head + [str(a) for a in args]


def shown(command: Sequence[str]) -> str:
    """The argv as one shell-quoted line: pasted into a shell, it runs the same command."""
    return " ".join(shlex.quote(str(part)) for part in command)
