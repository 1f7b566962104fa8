"""Build the one POSIX `sh` script that probes a host in one round trip.

Every section runs at once in the background, each under its own `timeout` (where the host
has none, a kill timer in sh that stops the section's own process group), writing to its
own file; when one finishes it writes its name to a FIFO, and the foreground loop prints that
section framed by nonce-carrying markers. Results therefore stream in the order sections
finish: the first panel fills after one connect plus the fastest section.

Values from config reach the host only as `export NAME=<shlex.quote(value)>` lines; section
bodies are constant code shipped with gpudash.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpudash.probe.registry import Section
from gpudash.shlib import LIB as SHLIB
from gpudash.shlib import grace

PRELUDE = (Path(__file__).parent / "prelude.sh").read_text(encoding="utf-8")
"""Read beside this module: `importlib.resources` (and the zipfile reader it imports) cost
every `gpudash` start ~10 ms on the 2-vCPU VM, before the first host's script could start,
for zipped installs that pip never makes."""


@dataclass(frozen=True)
class ProbePlan:
    """What one probe runs: the sections, their timeouts and the values they read."""

    nonce: str
    sections: tuple[Section, ...]
    env: Mapping[str, str]
    section_timeout: float

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sections)

    def timeout_for(self, section: Section) -> int:
        return max(1, round(min(section.timeout, self.section_timeout)))


def new_nonce() -> str:
    return secrets.token_hex(8)


def make_plan(
    sections: Sequence[Section], env: Mapping[str, str], section_timeout: float
) -> ProbePlan:
    return ProbePlan(new_nonce(), tuple(sections), dict(env), section_timeout)


def _section_file(section: Section) -> str:
    """A section's script file: it holds no secret. Its shell reads the nonce from the pipe
    it was started with into a plain (never exported) variable, says it is ready, and waits
    at the gate until every section has done the same, so that no tool of any section runs
    while a nonce is still in a pipe that the tool could open (`/proc/PID/fd/0`)."""
    return "\n".join(
        (
            "IFS= read -r GPUDASH_NONCE; exec </dev/null",
            "echo @ready >&3; exec 3>&-",
            'IFS= read -r gd_go <"${0%/*}/gate" || exit 125',
            PRELUDE,
            section.body,
        )
    )


def build_script(plan: ProbePlan) -> str:
    """The whole probe; `{ ...; } </dev/null` makes sh read all of it before running any,
    so no command inside can swallow the rest of the script from stdin.

    Trust (DESIGN.md "Trust"): the nonce lives only in shell memory. The foreground shell
    has it as an unexported variable (the script arrived on stdin, drained before anything
    runs); each section shell gets it through a pipe from a builtin `echo` (no argv, no
    environment, no file) before any tool runs (the gate). Tools never inherit fd 3, and a
    line a tool writes into the section FIFO by its path cannot end a section early: the
    foreground takes a section's status from `wait` on that section's own runner, which
    returns only once the section has really ended.

    The first line printed is the start marker and the last the exit marker: a host counts
    as answered only when both arrived (a login shell that refused or mangled the command
    prints neither)."""
    exports = [f"export {k}={shlex.quote(v)}" for k, v in sorted(plan.env.items())]
    nonce = f"GPUDASH_NONCE={shlex.quote(plan.nonce)}"
    # Each section's file is written by the shell's own printf, not by `cat` and a here-doc:
    # seven processes fewer on the host, and each section's shell still parses only its own.
    writes = [
        f"printf '%s\\n' {shlex.quote(_section_file(s))} >\"$D/{s.name}.sh\"" for s in plan.sections
    ]
    launches = [
        f'gd_run {s.name} {plan.timeout_for(s)} & GD_P{i}=$!; GD_PIDS="$GD_PIDS $!"'
        for i, s in enumerate(plan.sections)
    ]
    # Only names of this plan are taken from the FIFO, each once; never evaluated.
    cases = [f"    {s.name}) gd_p=$GD_P{i}; GD_P{i}= ;;" for i, s in enumerate(plan.sections)]
    n = len(plan.sections)
    return "\n".join(
        [
            "{",
            *exports,
            nonce,
            'M="@@gpudash:$GPUDASH_NONCE"',
            'echo "$M:start"',
            'D=$(mktemp -d "${TMPDIR:-/tmp}/gpudash.XXXXXX") ||',
            '  { echo "$M:fatal:mktemp"; exit 70; }',
            # Sections write to files, so none of them notices a closed channel. A ticker
            # makes the foreground write a blank line (ignored by the reader) every second:
            # once gpudash has gone, that write fails, and the EXIT trap stops every section.
            "GD_PIDS=",
            'gd_cleanup() { kill $GD_PIDS 2>/dev/null; rm -rf "$D"; }',
            "trap gd_cleanup EXIT",
            "trap 'exit 143' HUP INT TERM PIPE",
            'mkfifo "$D/q" "$D/gate" || { echo "$M:fatal:mkfifo"; exit 71; }',
            'exec 3<>"$D/q"',
            "GD_T=; command -v timeout >/dev/null 2>&1 && GD_T=1",
            '[ -n "$GD_T" ] || echo "$M:note:notimeout"',
            # Without `timeout`, `setsid` gives each section a process group of its own (as
            # `timeout` does), so that the kill timer and the traps stop the section's tools
            # too, not only its shell. `set -m` cannot stand in: dash and busybox ash refuse
            # job control without a terminal ("can't access tty"), and ssh gives none.
            'GD_G=; [ -n "$GD_T" ] || { command -v setsid >/dev/null 2>&1 && GD_G=setsid; }',
            '[ -n "$GD_T$GD_G" ] || echo "$M:note:nosetsid"',
            *writes,
            SHLIB,
            # gd_stop PID: stop a section and everything it started. `timeout` passes a TERM
            # on to its group and sends KILL the section grace later itself (-k). Under setsid
            # PID leads the section's group: the library's kill_wait of the group, as
            # `timeout -k` would; without either, of the section's shell alone.
            "gd_stop() {",
            '  [ -z "$GD_T" ] || { kill -TERM $1 2>/dev/null; return 0; }',
            '  gd_g=$1; [ -z "$GD_G" ] || gd_g=-$1',
            f"  kill_wait $gd_g {grace('section')}",
            "}",
            # Without `timeout` on PATH: the library's kill timer, watching the section's
            # shell each second and stopping it as gd_stop does; `.late` says it fired.
            "gd_timer() {",
            '  gd_g=$2; [ -z "$GD_G" ] || gd_g=-$2',
            f'  kill_timer "$1" {grace("section")} $gd_g "$3" $2',
            "}",
            "gd_run() {",
            # The trap before the launch: `timeout` (or setsid) puts the section in a process
            # group of its own, out of reach of a kill of the script's group, so a TERM that
            # arrived between the launch and a later trap would orphan the section and its
            # tools. `$!` is the launched child from the moment it exists; the timer is
            # stopped first, so that it cannot kill a reused pid later.
            "  gd_c=; gd_t=",
            "  trap 'kill $gd_t 2>/dev/null; gd_stop ${gd_c:-$!}; exit 143' TERM",
            '  if [ -n "$GD_T" ]; then',
            f'    echo "$GPUDASH_NONCE" | timeout -k {grace("section")} "$2" sh "$D/$1.sh"'
            ' >"$D/$1.out" 2>&1 &',
            "    gd_c=$!",
            "  else",
            '    echo "$GPUDASH_NONCE" | $GD_G sh "$D/$1.sh" >"$D/$1.out" 2>&1 &',
            '    gd_c=$!; gd_timer "$2" $gd_c "$D/$1.late" </dev/null >/dev/null 2>&1 3>&- &',
            "    gd_t=$!",
            "  fi",
            "  wait $gd_c",
            '  gd_rc=$?; [ -e "$D/$1.late" ] && gd_rc=124',
            '  echo "$1" >&3',
            "  exit $gd_rc",
            "}",
            *launches,
            # The gate: each section says @ready once it holds its nonce (one that ended
            # first says its name: passed on to the loop below). Then all pass at once.
            "gd_r=0; gd_early=",
            f"while [ $gd_r -lt {n} ] && read -r gd_s <&3; do",
            '  gd_r=$((gd_r + 1)); [ "$gd_s" = @ready ] || gd_early="$gd_early $gd_s"',
            "done",
            'exec 4<>"$D/gate"',
            f"gd_r=0; while [ $gd_r -lt {n} ]; do echo; gd_r=$((gd_r + 1)); done >&4",
            'for gd_s in $gd_early; do echo "$gd_s" >&3; done',
            # Not on stdout: a sleeping ticker must not hold the channel open at the end.
            # It holds the FIFO open itself, so its writes never fail: a script killed
            # outright (SIGKILL skips the EXIT trap) is noticed by `kill -0` of its pid.
            "( while sleep 1; do kill -0 $$ 2>/dev/null || exit; echo @tick >&3 || exit; done )"
            " >/dev/null 2>&1 4>&- &",
            'GD_PIDS="$GD_PIDS $!"',
            "gd_n=0",
            f"while [ $gd_n -lt {n} ] && read -r gd_s <&3; do",
            "  gd_p=",
            '  case "$gd_s" in',
            "    @tick) echo || exit 141; continue ;;",
            *cases,
            "  esac",
            '  [ -n "$gd_p" ] || continue',
            "  wait $gd_p; gd_rc=$?",
            '  printf \'%s:begin:%s\\n\' "$M" "$gd_s"',
            '  cat "$D/$gd_s.out"',
            '  printf \'\\n%s:end:%s:%s\\n\' "$M" "$gd_s" "$gd_rc"',
            "  gd_n=$((gd_n + 1))",
            "done",
            "exec 3>&- 4>&-",
            'echo "$M:exit:$gd_n"',
            "} </dev/null",
            "",
        ]
    )
