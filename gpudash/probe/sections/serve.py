"""The serve section: each served engine's state file, and whether its engine is really there.

The serve supervisor (the `serve` task on the host) keeps `$HOME/.cache/gpudash/serve/TASK.json`
up to date: engine, model, port, phase, the figures at readiness, the failure it classified.
Reading it costs the probe nothing, but a file only says what was true when it was written:
an engine that died after READY leaves a file that still says ready. So in the same round trip
the body checks the host itself for each file: is its pid alive (`kill -0`, or /proc/PID where
the engine runs as another user), is its port listening (/proc/net/tcp and tcp6, else `ss`).
The pid and port are picked out of the text with `grep -o` only to say which to check; the
parser reads the JSON itself and takes the host's answer only for the pid and port it read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from gpudash.probe.markdown import md
from gpudash.probe.parts import Part
from gpudash.probe.serve import MAX_BYTES, ServeState, parse_state
from gpudash.text import clean_line, is_uint

NAME = "serve"
TIMEOUT = 5.0
STATE_DIR = ".cache/gpudash/serve"
"""Where the serve supervisor keeps its state files, relative to the login's $HOME."""
MAX_FILES = 16
MAX_MEMBERS = 64
"""Processes of an engine's group listed (SGLang runs one scheduler per GPU, vLLM a worker)."""

BODY = rf"""
gd_sdir="$HOME/{STATE_DIR}"
# gd_sfield FILE KEY: the first `"KEY": N` of the file (which pid / port to check; the
# parser reads the JSON itself).
gd_sfield() {{
  head -c {MAX_BYTES} "$1" 2>/dev/null | grep -o "\"$2\"[[:space:]]*:[[:space:]]*[0-9]\{{1,9\}}" |
    head -n 1 | grep -o '[0-9]*$'
}}
# gd_listening PORT: 0 listening, 1 not, 2 cannot tell.
gd_listening() {{
  _h=$(printf '%04X' "$1")
  if [ -r /proc/net/tcp ]; then
    grep -q -E "^ *[0-9]+: [0-9A-F]+:$_h [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6 \
      2>/dev/null && return 0
    return 1
  fi
  have ss || return 2
  [ -n "$(ss -ltnH "sport = :$1" 2>/dev/null)" ] && return 0
  return 1
}}
gd_serve_one() {{
  _f=$1
  printf 'file %s\n' "${{_f##*/}}"
  _p=$(gd_sfield "$_f" pid)
  if [ -n "$_p" ]; then
    if kill -0 "$_p" 2>/dev/null || [ -d "/proc/$_p" ]; then
      printf 'pid %s alive\n' "$_p"
    else
      printf 'pid %s dead\n' "$_p"
    fi
  fi
  _g=$(gd_sfield "$_f" pgid)
  if [ -n "$_g" ] && [ "$_g" -gt 1 ]; then
    # the engine's processes (its workers hold GPU memory too): pgrp is the 3rd field after
    # the ")" that ends the command name, which may itself hold spaces
    _m=
    _n=0
    for _s in /proc/[0-9]*/stat; do
      {{ read -r _l < "$_s"; }} 2>/dev/null || continue
      set -- ${{_l##*) }}
      [ "${{3:-}}" = "$_g" ] || continue
      _q=${{_s#/proc/}}
      _m="$_m ${{_q%/stat}}"
      _n=$((_n + 1))
      [ $_n -ge {MAX_MEMBERS} ] && break
    done
    printf 'members%s\n' "$_m"
  fi
  _o=$(gd_sfield "$_f" port)
  if [ -n "$_o" ] && [ "$_o" -lt 65536 ]; then
    gd_listening "$_o"
    case $? in 0) _w=listening ;; 1) _w=closed ;; *) _w=unknown ;; esac
    printf 'port %s %s\n' "$_o" "$_w"
  fi
  echo json
  head -c {MAX_BYTES + 1} "$_f"
}}
gd_i=0
if [ -d "$gd_sdir" ]; then
  for gd_f in "$gd_sdir"/*.json; do
    [ -f "$gd_f" ] || continue
    gd_i=$((gd_i + 1))
    [ $gd_i -le {MAX_FILES} ] && part "state.$gd_i" gd_serve_one "$gd_f"
  done
fi
part files echo "$gd_i"
part clock date +%s
"""


@dataclass(frozen=True)
class Serve:
    """Every state file found (`states`, in the host's name order); `looked` False when the
    probe did not look (a capture older than this section)."""

    states: tuple[ServeState, ...] = ()
    host_now: float | None = None  # the host's clock (Unix time) when it was probed
    notes: tuple[str, ...] = ()
    looked: bool = True


_PART = re.compile(r"state\.([0-9]{1,6})")


def parse(parts: Mapping[str, Part]) -> Serve:
    clock = parts.get("clock")
    text = clock.text.strip() if clock is not None and clock.ok else ""
    host_now = float(text) if is_uint(text) and len(text) <= 12 else None
    if "files" not in parts:
        return Serve((), host_now, ("no files part",) if parts else (), looked=False)
    notes: list[str] = []
    numbered = sorted((int(m[1]), p) for n, p in parts.items() if (m := _PART.fullmatch(n)))
    states = tuple(_state(p) for _, p in numbered[:MAX_FILES])
    count = parts["files"].text.strip()
    if is_uint(count) and len(count) < 7 and int(count) > MAX_FILES:
        notes.append(f"{count} state files: only the first {MAX_FILES} read")
    return Serve(states, host_now, tuple(notes))


def _state(part: Part) -> ServeState:
    head, _, body = part.text.partition("\njson\n")
    if not body and part.text.endswith("\njson"):
        head = part.text[: -len("\njson")]
    fields: dict[str, list[str]] = {}
    for line in head.splitlines()[:8]:
        if line.startswith("members "):
            fields.setdefault("members", line.split(" ")[1 : MAX_MEMBERS + 1])
            continue
        key, _, value = line.partition(" ")
        fields.setdefault(key, value.split(" "))
    file = (fields.get("file") or [""])[0]
    file = clean_line(file.removesuffix(".json"))[:100] or "?"
    state = parse_state(file, body)
    pid, port = fields.get("pid", []), fields.get("port", [])
    alive = listening = None
    if len(pid) == 2 and is_uint(pid[0]) and state.pid is not None and int(pid[0]) == state.pid:
        alive = {"alive": True, "dead": False}.get(pid[1])
    if (
        len(port) == 2
        and is_uint(port[0])
        and state.port is not None
        and int(port[0]) == state.port
    ):
        listening = {"listening": True, "closed": False}.get(port[1])
    members = tuple(int(p) for p in fields.get("members", []) if is_uint(p) and len(p) <= 9)
    notes = state.notes
    if part.rc is None:
        notes = (*notes, "cut off (timeout)")
    return replace(state, alive=alive, listening=listening, members=members, notes=notes)


def summary(data: Serve) -> str:
    """The one line `gpudash probe` prints for this section."""
    if not data.looked:
        return "not looked for"
    if not data.states:
        return "no served engine (gpudash run serve HOST launches one)"
    return " · ".join(f"{s.file}: {brief(s, data.host_now)}" for s in data.states)


_WORST = {"failed": 0, "exited": 0, "stalled": 1, "unknown": 2, "starting": 3, "ready": 4}


def worst_first(states: tuple[ServeState, ...]) -> list[ServeState]:
    """The states, the one most in need of attention first (stable within a rank)."""
    return sorted(states, key=lambda s: _WORST.get(s.verdict, 5))


PHASE_WORDS = {"kv_cache": "KV cache", "graph_capture": "graph capture"}


def phase_words(phase: str | None) -> str:
    return PHASE_WORDS.get(phase or "", (phase or "?").replace("_", " "))


def _minutes(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def brief(s: ServeState, host_now: float | None) -> str:
    """`ready 312 s · 41 ms TTFT · 212 tok/s`, `failed: serve.oom`, `stalled: graph capture
    9m`, `starting: weights 2m`, `exited after ready`: one state in a few words (the fleet
    column and the summary line)."""
    verdict = s.verdict
    if verdict == "ready":
        r = s.ready
        bits = ["ready"]
        if r is not None and r.time_to_ready_s is not None:
            bits[0] += f" {r.time_to_ready_s:.0f} s"
        if r is not None and r.ttft_ms is not None:
            bits.append(f"{r.ttft_ms:.0f} ms TTFT")
        if r is not None and r.decode_tok_s is not None:
            bits.append(f"{r.decode_tok_s:.0f} tok/s")
        if s.listening is False:
            bits.append("port closed")
        return " · ".join(bits)
    if verdict == "exited":
        return f"exited after {s.state}" + (f" ({phase_words(s.phase)})" if s.phase else "")
    if verdict == "failed":
        return f"failed: {s.failure.code if s.failure else 'no cause recorded'}"
    if verdict in ("starting", "stalled"):
        entered = s.phase_entered()
        since = ""
        if entered is not None and host_now is not None and host_now >= entered:
            since = f" {_minutes(host_now - entered)}"
        return f"{verdict}: {phase_words(s.phase)}{since}"
    return verdict


TITLE = "Serve"


def report(data: Serve) -> list[str]:
    """Its part of the Markdown report (`gpudash report HOST`): each served engine."""
    if not data.looked:
        return ["Not looked for by this probe."]
    if not data.states:
        return ["No served engine on this host (`gpudash run serve HOST` launches one)."]
    lines: list[str] = []
    for s in data.states:
        port = f" on port {s.port}" if s.port is not None else ""
        tp = f", tp {s.tp}" if s.tp is not None else ""
        lines.append(
            f"- `{md(s.file)}`: {md(s.engine or '?')} serving {md(s.model or '?')}{port}{tp}:"
            f" **{md(brief(s, data.host_now))}**"
        )
        alive = {True: "alive", False: "gone", None: "not checked"}[s.alive]
        listening = {True: "listening", False: "closed", None: "not checked"}[s.listening]
        lines.append(f"  - pid {md(s.pid)} {alive}; port {listening}; log `{md(s.log)}`")
        r = s.ready
        if r is not None:
            jit = {True: "JIT-compiled at start", False: "no JIT at start", None: "JIT unknown"}
            lines.append(
                f"  - attention {md(r.attention_backend or 'not reported')}; FlashInfer"
                f" {jit[r.flashinfer_jit]}"
            )
            if r.phases_s:
                split = ", ".join(f"{md(phase_words(k))} {v:.1f} s" for k, v in r.phases_s)
                lines.append(f"  - phases: {split}")
        f = s.failure
        if f is not None:
            where = f" (log line {f.lineno})" if f.lineno is not None else ""
            lines.append(f"  - `{md(f.code)}`: {md(f.line or 'no line quoted')}{where}")
        lines += [f"  - note: {md(n)}" for n in s.notes]
    lines += [f"- note: {md(n)}" for n in data.notes]
    return lines
