"""The program the serve task runs on the host (with the serving venv's python): launch the
engine in its own session, stream its log with phase lines, watch for stalls, climb the
readiness ladder, measure, and exit 0 only at READY with the engine left running; otherwise
name the first root cause, stop the engine's process group and exit 1.

Lines gpudash reads (notes/serve-contract.md): `gpudash-serve: command ARGV`,
`gpudash-serve: phase PHASE ELAPSED`, `gpudash-serve: ready JSON`,
`gpudash-serve: failed CODE JSON`. Stdlib only, Python 3.9+; its siblings travel with it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

if __package__ in (None, ""):  # run as a file on the host: its folder holds the siblings
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    from gpudash.serve import command, hostcheck, statefile
    from gpudash.serve.engine_run import EngineRun, Verdict
except ImportError:  # on the host: the job's files/ folder is on sys.path
    import command  # type: ignore[no-redef, import-not-found]  # travels flat
    import hostcheck  # type: ignore[no-redef, import-not-found]  # travels flat
    import statefile  # type: ignore[no-redef, import-not-found]  # travels flat
    from engine_run import EngineRun, Verdict  # type: ignore[no-redef, import-not-found]

PREFIX = "gpudash-serve:"


def say(text: str) -> None:
    print(f"{PREFIX} {text}", flush=True)


def seconds(text: str) -> float:
    """ "30m", "90s", "2h" or a number of seconds (the task's durations, as gpudash wrote them)."""
    text = str(text).strip()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], 1)
    return float(text[:-1] if text[-1:] in "smh" else text) * scale


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="supervisor.py")
    job = env("GPUDASH_JOB", "")
    p.add_argument("--task", default=os.path.basename(job.rstrip("/")) or "serve")
    p.add_argument("--job", default=job)
    p.add_argument("--engine", default=env("GPUDASH_ENGINE", "sglang"))
    p.add_argument("--venv", default=env("GPUDASH_VENV", "~/venvs/serve"))
    p.add_argument("--model", default=env("GPUDASH_MODEL", ""))
    p.add_argument("--name", default=env("GPUDASH_NAME", ""))
    p.add_argument("--port", default=env("GPUDASH_PORT", "auto"))
    p.add_argument("--tp", type=int, default=int(env("GPUDASH_TP", "1") or 1))
    p.add_argument("--device", default=env("GPUDASH_DEVICE", "cpu"))
    p.add_argument("--arg", action="append", dest="args", default=None)
    p.add_argument("--ready-timeout", type=seconds, default=env("GPUDASH_READY_TIMEOUT", "30m"))
    p.add_argument("--stall", type=seconds, default=env("GPUDASH_STALL", "5m"))
    p.add_argument("--grace", type=float, default=15.0)
    p.add_argument("--state", default=None, help="the state file (default: per the contract)")
    ns = p.parse_args(argv)
    if ns.args is None:
        ns.args = [a for a in env("GPUDASH_ARGS", "").split("\n") if a]
    for name in ("ready_timeout", "stall"):
        value = getattr(ns, name)
        setattr(ns, name, seconds(value) if isinstance(value, str) else value)
    ns.venv = os.path.expanduser(ns.venv)
    if ns.model.startswith("~"):
        ns.model = os.path.expanduser(ns.model)
    return ns


def fail(state: statefile.State, code: str, line: str, why: str, fix: str, **extra: Any) -> int:
    failure = {"code": code, "line": line, "lineno": extra.pop("lineno", 0), "why": why}
    failure.update(fix=fix, source=extra.pop("source", ""))
    state.update(state=extra.pop("outcome", "failed"), failure=failure, **extra)
    say(f"failed {code} {json.dumps(failure, sort_keys=True)}")
    return 1


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(argv)
    if ns.engine not in command.ENGINES:
        print(f"{PREFIX} engine {ns.engine!r}: expected one of {command.ENGINES}", flush=True)
        return 2
    name = ns.name if ns.engine != "transformers" else ""
    name = name or command.default_name(ns.engine, ns.model)
    state = statefile.State(
        ns.task, ns.state, engine=ns.engine, model=ns.model, name=name, tp=ns.tp
    )
    # Preflight on the host, before anything starts (gpudash.serve.hostcheck says why here)
    earlier = hostcheck.running_group(ns.job)
    if earlier is not None:  # a second engine would lose the first one's group (and GPUs)
        line = f"this task's earlier server still runs (process group {earlier})"
        return fail(
            state,
            "serve.port_in_use",
            line,
            line + ": a second launch would compete with it for the GPUs and lose its group",
            "gpudash stop serve HOST, then launch again",
        )
    if str(ns.port) == "auto":
        port = hostcheck.first_free_port()
        if port is None:
            return fail(state, "serve.port_in_use", "", "no free port in 30000-30199", "free one")
    else:
        port = int(ns.port)
        if not hostcheck.port_free(port):
            holder = hostcheck.port_holder(port)
            return fail(
                state,
                "serve.port_in_use",
                f"port {port} is held by {holder}",
                f"port {port} is held by {holder}: the engine could not bind it",
                "stop that process (an earlier server: gpudash stop serve HOST),"
                ' or set port = "auto"',
                port=port,
            )
    refusals = hostcheck.all_checks(ns.engine, ns.model, ns.tp, ns.device)
    if refusals:
        for line in refusals:
            say(f"refused {line}")
        code, _, rest = refusals[0].partition(": ")
        what, _, fix = rest.rpartition("; fix: ")
        return fail(state, code, refusals[0], what, fix, port=port)

    argv_ = command.argv(
        ns.engine,
        ns.venv,
        ns.model,
        port=port,
        tp=ns.tp,
        name=ns.name,
        device=ns.device,
        args=ns.args,
    )
    say(f"command {command.shown(argv_)}")
    log_path = os.path.join(ns.job or os.getcwd(), "engine.log")
    state.update(port=port, command=argv_, log=log_path)
    run = EngineRun(ns, argv_, port, name, state, log_path, say)
    verdict = run.start_and_watch()
    return finish(run, verdict, ns.grace)


def finish(run: EngineRun, verdict: Verdict, grace: float) -> int:
    if verdict.ready is not None:
        run.state.update(state="ready", ready=verdict.ready)
        say(f"ready {json.dumps(verdict.ready, sort_keys=True)}")
        return 0
    run.stop(grace)
    failure = verdict.failure or {}
    return fail(
        run.state,
        str(failure.get("code", "serve.exited")),
        str(failure.get("line", "")),
        str(failure.get("why", "")),
        str(failure.get("fix", "")),
        lineno=failure.get("lineno", 0),
        source=failure.get("source", ""),
        outcome=verdict.state,
    )


def _on_term(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_term)
    sys.exit(main())


__all__ = ["main", "seconds"]
