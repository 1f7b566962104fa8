"""Build the one POSIX `sh` script that probes a host in one round trip.

Every section runs at once in the background, each under its own `timeout`, writing to its
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


def build_script(plan: ProbePlan) -> str:
    """The whole probe; `{ ...; } </dev/null` makes sh read all of it before running any,
    so no command inside can swallow the rest of the script from stdin."""
    exports = [f"export {k}={shlex.quote(v)}" for k, v in sorted(plan.env.items())]
    # The nonce is a plain variable of the section scripts, never exported: a tool they run
    # (a hostile nvidia-smi, a program dumping its environment) cannot learn it and so
    # cannot print a marker that ends its section early or forges another one.
    nonce = f"GPUDASH_NONCE={shlex.quote(plan.nonce)}"
    # Each section's file is written by the shell's own printf, not by `cat` and a here-doc:
    # seven processes fewer on the host, and each section's shell still parses only its own.
    writes = [
        f"printf '%s\\n' {shlex.quote(chr(10).join((nonce, PRELUDE, s.body)))} >\"$D/{s.name}.sh\""
        for s in plan.sections
    ]
    launches = [f"gd_run {s.name} {plan.timeout_for(s)} &" for s in plan.sections]
    return "\n".join(
        [
            "{",
            *exports,
            nonce,
            'M="@@gpudash:$GPUDASH_NONCE"',
            'D=$(mktemp -d "${TMPDIR:-/tmp}/gpudash.XXXXXX") ||',
            '  { echo "$M:fatal:mktemp"; exit 70; }',
            # Sections write to files, so none of them notices a closed channel. A ticker
            # makes the foreground write a blank line (ignored by the reader) every second:
            # once gpudash has gone, that write fails, and the EXIT trap stops every section.
            "GD_PIDS=",
            'gd_cleanup() { kill $GD_PIDS 2>/dev/null; rm -rf "$D"; }',
            "trap gd_cleanup EXIT",
            "trap 'exit 143' HUP INT TERM PIPE",
            'mkfifo "$D/q" || { echo "$M:fatal:mkfifo"; exit 71; }',
            'exec 3<>"$D/q"',
            "GD_T=; command -v timeout >/dev/null 2>&1 && GD_T=1",
            *writes,
            "gd_run() {",
            '  if [ -n "$GD_T" ]; then timeout -k 2 "$2" sh "$D/$1.sh" >"$D/$1.out" 2>&1 &',
            '  else sh "$D/$1.sh" >"$D/$1.out" 2>&1 & fi',
            "  gd_c=$!",
            "  trap 'kill $gd_c 2>/dev/null; exit 143' TERM",
            "  wait $gd_c",
            '  echo "$1 $?" >&3',
            "}",
            *(f'{launch}\nGD_PIDS="$GD_PIDS $!"' for launch in launches),
            # Not on stdout: a sleeping ticker must not hold the channel open at the end.
            # It holds the FIFO open itself, so its writes never fail: a script killed
            # outright (SIGKILL skips the EXIT trap) is noticed by `kill -0` of its pid.
            "( while sleep 1; do kill -0 $$ 2>/dev/null || exit; echo @tick >&3 || exit; done )"
            " >/dev/null 2>&1 &",
            'GD_PIDS="$GD_PIDS $!"',
            "gd_n=0",
            f"while [ $gd_n -lt {len(plan.sections)} ] && read -r gd_s gd_rc <&3; do",
            '  if [ "$gd_s" = @tick ]; then echo || exit 141; continue; fi',
            '  printf \'%s:begin:%s\\n\' "$M" "$gd_s"',
            '  cat "$D/$gd_s.out"',
            '  printf \'\\n%s:end:%s:%s\\n\' "$M" "$gd_s" "$gd_rc"',
            "  gd_n=$((gd_n + 1))",
            "done",
            "exec 3>&-",
            "} </dev/null",
            "",
        ]
    )
