"""Probe one host: connect, run the one script, parse each section as it arrives.

Yields events; never raises for anything a host does. Sections that did not arrive (the host
dropped, a section was killed) still get a result carrying the reason, so nothing the host did
send is lost and every panel can say why it is empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TypeVar

from gpudash.aio import deadline
from gpudash.config.model import HostConfig
from gpudash.model import (
    Event,
    HostState,
    HostStateChanged,
    ProbeFinished,
    SectionDone,
    SectionResult,
)
from gpudash.probe.parts import split_parts
from gpudash.probe.registry import SECTION_NAMES, Section, all_sections, sections_loaded
from gpudash.probe.script import ProbePlan, make_plan
from gpudash.probe.stream import NOTE, RawSection
from gpudash.transport.base import Transport, TransportError

TIMED_OUT = (124, 137)
_T = TypeVar("_T")


def plan_for(host: HostConfig, sections: Sequence[Section] | None = None) -> ProbePlan:
    env = {
        "GPUDASH_MODEL_DIRS": "\n".join(host.model_dirs),
        "GPUDASH_VENV_PATHS": "\n".join(host.venv_paths),
        "GPUDASH_NET_TARGETS": "\n".join(host.network_targets),
    }
    return make_plan(sections or all_sections(), env, host.section_timeout)


async def _plan(host: HostConfig, sections: Sequence[Section] | None) -> ProbePlan:
    """The first plan of a process imports every section's module (~50 ms on the 2-vCPU VM):
    in a thread, so that the handshake it runs beside is not held up while it waits on the
    network. The parsers are not among them: see `warm_parsers`."""
    if not sections and not sections_loaded():
        return await asyncio.to_thread(_beside_the_loop, plan_for, host)
    return plan_for(host, sections)


_SWITCH_S = 0.0005
_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.0


@contextlib.contextmanager
def _loop_first() -> Iterator[None]:
    """While a thread imports modules beside a handshake: the interpreter lock is handed to
    the event loop within 0.5 ms of its asking instead of 5 (Python's switch interval), so
    each of the handshake's ~8 round trips does not wait up to 5 ms for its next step.
    Measured at RTT 0 on the 2-vCPU VM, 7 runs each: the connect with the sections' modules
    loading beside it took 58-71 ms, with this 50-58 ms (34-39 ms with nothing beside it)."""
    global _switch_users, _switch_saved
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, _SWITCH_S))
        _switch_users += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_saved)


def _beside_the_loop(fn: Callable[..., _T], *args: object) -> _T:
    with _loop_first():
        return fn(*args)


_WARMED: set[str] = set()


def _built_in(section: Section) -> bool:
    """Only gpudash's own sections are warmed: their parsers are known to be quick on
    nothing, while a section made elsewhere (a test's, with a parser that spins) is not."""
    return getattr(section.parse, "__module__", "").startswith("gpudash.probe.sections.")


def warm_parsers(sections: Sequence[Section]) -> None:
    """Load the sections' parsers, once a process, by parsing nothing: a parser is total, so
    `parse({})` only imports what it needs (~35 ms for all of them on the 2-vCPU VM).

    The script needs none of them (a section module imports its parsers in `parse`), so they
    load while the host runs the script, not on the way to its first byte: started once the
    connection is up, in a thread that lets the event loop in between sections (sending the
    script takes it a few steps), they are ready before the first section arrives
    (bench/bench_probe_split.py). Started with the first section instead, they were still
    loading when the last one came (+40 ms at RTT 0)."""
    for section in sections:
        time.sleep(0)  # the interpreter lock to the event loop, if it waits for it
        if section.name in _WARMED or not _built_in(section):
            continue
        _WARMED.add(section.name)
        with contextlib.suppress(Exception):  # the real parse says what is wrong, with its text
            section.summary(section.parse({}))


def parse_section(
    section: Section, raw: RawSection, nonce: str, elapsed: float, timeout: float | None = None
) -> SectionResult:
    """`timeout` is the one the host enforced (the section's own, capped by the host's
    section_timeout), so a timed-out section names the limit that actually applied."""
    parts = split_parts(raw.text, nonce)
    error = None
    if raw.rc in TIMED_OUT:
        error = f"timed out after {timeout or section.timeout:g}s"
    elif raw.rc is None:
        error = "cut off before it finished"
    elif raw.truncated:
        error = "output too large: truncated"
    try:
        data = section.parse(parts)
    except Exception as exc:  # a parser bug must not take the host down with it
        data, error = None, f"could not parse: {type(exc).__name__}: {exc}"
    return SectionResult(section.name, data, error, parts, elapsed, raw.rc)


async def probe_host(
    host: HostConfig,
    transport: Transport,
    sections: Sequence[Section] | None = None,
) -> AsyncIterator[Event]:
    total = len(sections) if sections else len(SECTION_NAMES)
    start = time.monotonic()
    yield HostStateChanged(host.name, HostState.CONNECTING, sections_total=total)
    planning = asyncio.ensure_future(_plan(host, sections))
    try:
        await transport.connect()
        plan = await planning
    except TransportError as exc:
        yield HostStateChanged(host.name, HostState.FAILED, exc.reason)
        yield ProbeFinished(host.name, time.monotonic() - start)
        return
    finally:
        planning.cancel()  # when the connect failed or the round was left: nothing to plan
    if not _WARMED.issuperset(plan.names):
        # Not awaited: a slow parser costs its own section, never this host's end.
        asyncio.get_running_loop().run_in_executor(
            None, _beside_the_loop, warm_parsers, plan.sections
        )
    by_name = {s.name: s for s in plan.sections}
    yield HostStateChanged(host.name, HostState.PROBING, sections_total=total)
    probe_start = time.monotonic()
    seen: set[str] = set()
    notes: list[str] = []
    failure: str | None = None
    stream = transport.probe(plan, timeout=host.probe_timeout)
    try:
        async with deadline(host.probe_timeout + 5):
            async for raw in stream:
                if raw.name == NOTE:
                    notes.append(raw.text)
                    continue
                section = by_name.get(raw.name)
                if section is None or raw.name in seen:
                    continue  # not ours: a forged or repeated frame
                seen.add(raw.name)
                elapsed = time.monotonic() - probe_start
                limit = plan.timeout_for(section)
                # Off the event loop: a hostile host's output slows only its own parse, never
                # another host's result, the probe deadline or a key press (DESIGN "Trust").
                result = await asyncio.to_thread(
                    parse_section, section, raw, plan.nonce, elapsed, limit
                )
                yield SectionDone(host.name, result)
    except TransportError as exc:
        failure = exc.reason
    except TimeoutError:
        failure = f"probe timed out after {host.probe_timeout:g}s"
    finally:
        await stream.aclose()
    # One form for every failure: `host: reason` on the host (as connect failures read),
    # the bare reason on each section that did not arrive.
    failure = failure and failure.removeprefix(f"{host.name}: ")
    for name in plan.names:
        if name not in seen:
            why = failure or getattr(
                transport, "missing_section", "the host printed no output for it"
            )
            result = SectionResult(name, None, why, {}, time.monotonic() - probe_start, None)
            yield SectionDone(host.name, result)
    if failure:
        reason = f"{host.name}: {failure}"
        yield HostStateChanged(host.name, HostState.FAILED, reason, notes=tuple(notes))
    else:
        yield HostStateChanged(host.name, HostState.READY, notes=tuple(notes))
    yield ProbeFinished(host.name, time.monotonic() - start)
