"""One launch of the engine, watched: its own session, its log tailed into ours with phase
lines, the stall watchdog (no new log line AND no change in GPU memory for `stall`), the
ladder's steps, and the verdict. The supervisor (`supervisor.py`) owns the arguments and the
exit; this owns the process and the loop.

Travels to the host: stdlib only, Python 3.9+.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:
    from gpudash.serve import ladder, ready, watchdog
except ImportError:  # on the host: the job's files/ folder is on sys.path
    import ladder  # type: ignore[no-redef, import-not-found]  # travels flat
    import ready  # type: ignore[no-redef, import-not-found]  # travels flat
    import watchdog  # type: ignore[no-redef, import-not-found]  # travels flat

try:  # helper servelog's modules; without them phases come from the ladder alone
    from gpudash.serve import phases as _phases
except ImportError:
    try:
        import phases as _phases  # type: ignore[no-redef, import-not-found]  # travels flat
    except ImportError:
        _phases = None  # type: ignore[assignment]
try:
    from gpudash.serve import classify as _classify
except ImportError:
    try:
        import classify as _classify  # type: ignore[no-redef, import-not-found]  # travels flat
    except ImportError:
        _classify = None  # type: ignore[assignment]

PHASES = getattr(
    _phases, "PHASES", ("launch", "weights", "kv_cache", "graph_capture", "warmup", "listening")
)
TAIL = 20  # log lines quoted with a stall or an exit
MAX_LINE = 1 << 20  # an engine line longer than this is cut into pieces
OWN_PREFIX = "gpudash-serve:"
_INSTALL = "install the engine in the venv (the serving task)"
_ERROR = re.compile(r"(Error|Exception|error:|Traceback|FATAL|Killed)")


@dataclass
class Verdict:
    ready: dict[str, Any] | None = None
    failure: dict[str, Any] | None = None
    state: str = "failed"


def _failure(code: str, line: str, why: str, fix: str, lineno: int = 0, source: str = "") -> dict:
    return {"code": code, "line": line, "lineno": lineno, "why": why, "fix": fix, "source": source}


def _as_dict(failure: Any) -> dict[str, Any]:
    """classify.Failure as the state file's "failure" object."""
    return {k: getattr(failure, k) for k in ("code", "line", "lineno", "why", "fix", "source")}


class EngineRun:
    def __init__(
        self,
        ns: Any,
        argv: list[str],
        port: int,
        name: str,
        state: Any,
        log_path: str,
        say: Callable[[str], None],
    ) -> None:
        self.ns, self.argv, self.port, self.name = ns, argv, port, name
        self.state, self.log_path, self.say = state, log_path, say
        self.proc: subprocess.Popen[bytes] | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL)
        self.lineno = 0
        self.phases: dict[str, float] = {}
        self.tracker = _phases.PhaseTracker(ns.engine) if _phases else None
        self.classifier = _classify.Classifier(ns.engine) if _classify else None
        self.first_error: str | None = None  # the first error-like line (classify's fallback)
        self.first_error_lineno = 0
        self.t0 = time.monotonic()

    # --- the engine's process -------------------------------------------------------------
    def launch(self) -> None:
        log = open(self.log_path, "wb")  # noqa: SIM115 - this run's log; the engine keeps it
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                close_fds=True,
            )
        finally:
            log.close()
        pgid = self.proc.pid  # a session leader: its pid is its process group's id
        if self.ns.job:
            tmp = os.path.join(self.ns.job, "service.pgid.tmp")
            with open(tmp, "w") as f:
                f.write(f"{pgid}\n")
            os.replace(tmp, os.path.join(self.ns.job, "service.pgid"))
        self.state.update(pid=self.proc.pid, pgid=pgid)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float) -> None:
        """TERM to the engine's whole group (its workers too), KILL after `grace`."""
        if self.proc is None:
            return
        pgid = self.proc.pid
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
                os.killpg(pgid, signal.SIGCONT)  # a stopped process acts on TERM only then
            except OSError:
                break
            end = time.monotonic() + wait
            while time.monotonic() < end:
                self.proc.poll()
                try:
                    os.killpg(pgid, 0)
                except OSError:
                    break
                time.sleep(0.2)
            else:
                continue
            break
        self.proc.poll()
        if self.ns.job:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.ns.job, "service.pgid"))

    # --- the log -------------------------------------------------------------------------
    def _catch_up(self, log: Any, partial: bytes) -> bytes:
        """Every whole line written to the log so far, fed; the unfinished rest returned."""
        while True:
            chunk = log.read(1 << 20)
            if not chunk:
                return partial
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()
            if len(partial) > MAX_LINE:
                lines.append(partial)
                partial = b""
            for raw in lines:
                self.feed(raw)

    def feed(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        self.lineno += 1
        # The engine's text never passes for the supervisor's own lines (gpudash reads them)
        print(("  " + line) if line.startswith(OWN_PREFIX) else line, flush=True)
        self.tail.append(line)
        if self.classifier is not None:
            self.classifier.feed(line)
        if self.first_error is None and _ERROR.search(line):
            self.first_error, self.first_error_lineno = line.strip()[:500], self.lineno
        phase = self.tracker.feed(line) if self.tracker is not None else None
        if phase:
            self.enter(phase)

    def enter(self, phase: str) -> None:
        """Phases only move forward: a later tracker line for an earlier phase is ignored."""
        if phase in self.phases or phase not in PHASES:
            return
        current = max((PHASES.index(p) for p in self.phases), default=-1)
        if PHASES.index(phase) < current:
            return
        at = ladder.since(self.t0)
        self.phases[phase] = at
        self.say(f"phase {phase} {at}")
        self.state.update(phase=phase, phases=dict(self.phases))

    # --- the loop ------------------------------------------------------------------------
    def start_and_watch(self) -> Verdict:
        # A TERM (gpudash stop / cancel) or ^C from the engine's launch on is a stop: one that
        # came between the launch and the watch escaped as a traceback and left the engine's
        # group running (1 run in ~330 of tests/ssh/test_serve_supervisor.py, 2026-12-06).
        climb: ladder.Ladder | None = None
        try:
            try:
                self.launch()
            except OSError as exc:
                line = f"{self.argv[0]}: {exc.strerror}"
                why = f"cannot start the engine: {line}"
                return Verdict(failure=_failure("serve.exited", line, why, _INSTALL))
            self.enter("launch")
            climb = ladder.Ladder(self.port, self._model_field(), self.name)
            climb.start()
            return self._watch(climb)
        except KeyboardInterrupt:
            stopped = _failure("serve.exited", "", "stopped before it was ready", "")
            return Verdict(failure=stopped, state="stopped")
        finally:
            if climb is not None:
                climb.stop.set()

    def _model_field(self) -> str:
        """What a chat request names: the served name (transformers: the model as given)."""
        return self.ns.model if self.ns.engine == "transformers" else self.name

    def _watch(self, climb: ladder.Ladder) -> Verdict:
        log = open(self.log_path, "rb")  # noqa: SIM115
        backoff = ready.Backoff(0.05, 0.5)
        watch = watchdog.StallWatch(self.ns.stall)
        health_at: float | None = None
        first: ready.Generation | None = None
        ready_at: float | None = None
        partial = b""
        deadline = self.t0 + self.ns.ready_timeout
        while True:
            chunk = log.read(1 << 20)
            wait = backoff.next()
            if chunk:
                lines = (partial + chunk).split(b"\n")
                partial = lines.pop()
                if len(partial) > MAX_LINE:  # a line without end: cut, not held in memory
                    lines.append(partial)
                    partial = b""
                for raw in lines:
                    self.feed(raw)
                watch.activity()
                backoff.reset()
                wait = 0
            for kind, value in climb.drain(wait):
                if kind == "port":
                    # the log's lines up to now first: the port can be seen open before the
                    # lines of the phases that came before it were read
                    partial = self._catch_up(log, partial)
                    self.enter("listening")
                elif kind == "health":
                    self.say(f"health {value}")
                    if value == 200 and health_at is None:
                        health_at = time.monotonic()
                elif kind == "models":
                    self.say(("models ok: " if value[0] else "warning: ") + value[1])
                elif kind == "gen_failed":
                    self.say(f"generation failed: {value.error}")
                    if health_at and time.monotonic() - health_at > self.ns.stall:
                        return self._not_ready(value)
                elif kind == "generated" and self.alive():
                    first, ready_at = value, time.monotonic()
                    self.say(
                        f"generated {value.tokens} tokens ({value.content[:40]!r}):"
                        f" READY at {ladder.since(self.t0)} s"
                    )
                    self.state.update(state="ready", ready=self._figures(ready_at, None))
                elif kind == "measured" and self.alive():
                    if not value.ok:
                        self.say(f"warning: the measuring request failed: {value.error}")
                    figures = self._figures(ready_at or time.monotonic(), value)
                    return Verdict(ready=figures, state="ready")
            if not self.alive():
                time.sleep(0.2)  # the last lines it wrote
                rest = partial + log.read()
                for raw in rest.split(b"\n") if rest else ():
                    self.feed(raw)
                return self._exited()
            now = time.monotonic()
            if now > deadline:
                if first is not None:  # ready, but the measuring request never finished
                    return Verdict(ready=self._figures(ready_at or now, None), state="ready")
                return self._timeout(health_at is not None)
            quiet = watch.stalled() if health_at is None else None
            if quiet is not None:  # after /health answers, a slow chat is not a stall
                return self._stalled(quiet)

    def _phase(self) -> str:
        return max(self.phases, key=PHASES.index) if self.phases else "launch"

    def _figures(self, ready_at: float, gen: ready.Generation | None) -> dict[str, Any]:
        order = sorted(self.phases.items(), key=lambda kv: kv[1])
        total = round(ready_at - self.t0, 1)
        split = {}
        for i, (phase, at) in enumerate(order):
            end = order[i + 1][1] if i + 1 < len(order) else total
            split[phase] = round(end - at, 1)
        facts = dict(getattr(self.tracker, "facts", None) or {})
        figures = {
            "time_to_ready_s": total,
            "ttft_ms": round(gen.ttft_s * 1000, 1) if gen and gen.ttft_s is not None else None,
            "decode_tok_s": round(gen.decode_tok_s, 1) if gen and gen.decode_tok_s else None,
            "attention_backend": facts.get("attention_backend"),
            "flashinfer_jit": facts.get("flashinfer_jit"),
            "phases_s": split,
        }
        if gen is not None:
            figures["measured_tokens"] = gen.tokens
        return figures

    def _root(self) -> dict[str, Any] | None:
        result = self.classifier.result() if self.classifier is not None else None
        return None if result is None else _as_dict(result)

    def _first_error(self) -> str | None:
        """classify's first error line; else the first line that looks like one (a CLI's
        "Error: No such option" that classify does not take for an engine error)."""
        found = self.classifier.first_error() if self.classifier is not None else None
        return found or self.first_error

    def _exited(self) -> Verdict:
        rc = self.proc.returncode if self.proc else None
        line = self._first_error() or (self.tail[-1] if self.tail else "")
        why = f"the engine exited (rc {rc}) before it was ready, in phase {self._phase()}"
        lineno = self.first_error_lineno if line == self.first_error else 0
        exited = _failure("serve.exited", line, why, self._read(), lineno)
        return Verdict(failure=self._root() or exited)

    def _not_ready(self, gen: ready.Generation) -> Verdict:
        why = f"/health answers 200 but a streamed chat fails: {gen.error}"
        failure = _failure("serve.not_ready", gen.error, why, self._read())
        return Verdict(failure=self._root() or failure)

    def _stalled(self, quiet: float) -> Verdict:
        last = " | ".join(list(self.tail)[-5:])
        cause = getattr(_classify, "stall_cause", None)
        waited = cause(list(self.tail)) if cause is not None else None
        if waited is not None:  # the log says what it waits on (a stale JIT lock)
            return Verdict(failure=_as_dict(waited), state="stalled")
        phase = self._phase()
        title = getattr(_phases, "PHASE_TITLES", {}).get(phase, phase)
        phase += f" ({title})" if title != phase else ""
        why = f"stalled in {phase}: no log line and no change in GPU memory for"
        why += f" {quiet:.0f} s"
        fix = "look at the last lines; raise params.stall if this phase is slow here"
        failure = _failure("serve.stalled", last, why, fix + " (a first JIT build)")
        return Verdict(failure=self._root() or failure, state="stalled")

    def _timeout(self, healthy: bool) -> Verdict:
        why = f"not ready within ready_timeout ({self.ns.ready_timeout:.0f} s), in phase"
        why += f" {self._phase()}" + (" (/health answered 200)" if healthy else "")
        last = self.tail[-1] if self.tail else ""
        fix = "raise params.ready_timeout, or " + self._read()
        return Verdict(failure=self._root() or _failure("serve.not_ready", last, why, fix))

    def _read(self) -> str:
        return "read the engine's log: " + self.log_path
