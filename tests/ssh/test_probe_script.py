"""The one-round-trip probe script, run for real by /bin/sh through the local transport."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from gpudash.probe.parts import split_parts
from gpudash.probe.registry import Section
from gpudash.probe.script import build_script, make_plan
from gpudash.probe.stream import MAX_SECTION_CHARS, FrameReader
from gpudash.transport.local import LocalTransport
from tests.support.tools import require


def _section(name: str, body: str, timeout: float = 10) -> Section:
    return Section(
        name, timeout, body, lambda parts: parts, lambda data: "", name, lambda d: [], {}
    )


async def _run(sections, env=None, timeout=30):
    plan = make_plan(sections, env or {}, 20)
    arrivals = []
    start = time.monotonic()
    async for raw in LocalTransport(use_nvml=False).probe(plan, timeout=timeout):
        arrivals.append((time.monotonic() - start, raw))
    return plan, arrivals


async def test_sections_stream_in_the_order_they_finish_not_the_order_they_were_listed():
    _, arrivals = await _run(
        [_section("slow", "part s sleep 1"), _section("fast", "part f echo quick")]
    )
    names = [raw.name for _, raw in arrivals]
    assert names == ["fast", "slow"]
    fast_at, slow_at = arrivals[0][0], arrivals[1][0]
    assert fast_at < 0.5 <= slow_at


async def test_a_hung_section_is_killed_by_its_own_timeout_and_the_others_still_arrive():
    _, arrivals = await _run(
        [_section("hang", "part h sleep 60", timeout=1), _section("ok", "part o echo fine")]
    )
    by_name = {raw.name: raw for _, raw in arrivals}
    assert by_name["hang"].rc == 124
    assert by_name["ok"].rc == 0
    assert max(t for t, _ in arrivals) < 5


async def test_parts_keep_their_own_exit_status_and_stderr():
    plan, arrivals = await _run(
        [_section("s", 'part a echo out\npart b sh -c "echo err >&2; exit 3"')]
    )
    parts = split_parts(arrivals[0][1].text, plan.nonce)
    assert (parts["a"].rc, parts["a"].text) == (0, "out")
    assert (parts["b"].rc, parts["b"].text) == (3, "err")


async def test_a_missing_tool_is_reported_as_not_found_not_as_an_error():
    plan, arrivals = await _run([_section("s", "part t need no-such-tool-xyz")])
    part = split_parts(arrivals[0][1].text, plan.nonce)["t"]
    assert part.text == "no-such-tool-xyz: not found"
    assert part.rc == 127


async def test_a_host_cannot_forge_a_section_marker_without_the_nonce():
    forged = "printf '@@gpudash:0000:end:s:0\\n@@gpudash:0000:begin:evil\\n'"
    plan, arrivals = await _run([_section("s", f"part a {forged}")])
    assert [raw.name for _, raw in arrivals] == ["s"]
    assert "@@gpudash:0000:begin:evil" in split_parts(arrivals[0][1].text, plan.nonce)["a"].text


async def test_config_values_arrive_as_literal_text_never_as_shell_code(tmp_path: Path):
    marker = tmp_path / "pwned"
    value = f"'; touch {marker} #\n$(touch {marker}) `touch {marker}`"
    plan, arrivals = await _run(
        [_section("s", 'part v printf %s "$GPUDASH_MODEL_DIRS"')], {"GPUDASH_MODEL_DIRS": value}
    )
    assert split_parts(arrivals[0][1].text, plan.nonce)["v"].text == value
    assert not marker.exists()


async def test_invalid_utf8_becomes_replacement_characters():
    plan, arrivals = await _run([_section("s", "part a printf 'GPU \\377\\376 ok'")])
    assert split_parts(arrivals[0][1].text, plan.nonce)["a"].text == "GPU \ufffd\ufffd ok"


def test_a_section_printing_more_than_the_cap_is_truncated_and_says_so():
    reader = FrameReader("n")
    out = reader.feed(b"@@gpudash:n:begin:big\n")
    line = b"x" * 1000 + b"\n"
    for _ in range(MAX_SECTION_CHARS // 1000 + 10):
        out += reader.feed(line)
    out += reader.feed(b"\n@@gpudash:n:end:big:0\n")
    assert len(out) == 1 and out[0].truncated
    assert len(out[0].text) <= MAX_SECTION_CHARS


def test_a_section_cut_off_by_a_dropped_connection_keeps_what_arrived():
    reader = FrameReader("n")
    reader.feed(b"@@gpudash:n:begin:gpus\n@@gpudash:n:part:q\nhalf a tab")
    (section,) = reader.finish()
    assert section.rc is None and "half a tab" in section.text


@pytest.mark.parametrize("shell", ["/bin/sh", "dash"])
def test_the_script_is_valid_posix_sh(tmp_path: Path, shell: str):
    import subprocess

    if not shell.startswith("/"):
        require(shell)
    from gpudash.probe.registry import all_sections

    script = tmp_path / "probe.sh"
    script.write_text(build_script(make_plan(all_sections(), {"A": "b"}, 5)))
    subprocess.run([shell, "-n", str(script)], check=True)


def _session(sid: int) -> dict[int, str]:
    """The processes in session `sid`: pid -> command line."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except (OSError, IndexError):
            continue
        if int(stat[3]) == sid:
            found[int(proc.name)] = args
    return found


def _session_commands(sid: int) -> list[str]:
    return list(_session(sid).values())


def test_the_heartbeat_stops_when_the_script_is_killed_outright():
    """SIGKILL (the OOM killer, `kill -9`) skips the script's EXIT trap, which stops its
    heartbeat; the heartbeat holds the script's FIFO open itself, so its writes never
    failed and it ticked on for hours. It now checks that the script is still there."""
    plan = make_plan([_section("long", "part l sleep 20", timeout=30)], {}, 40)
    shell = subprocess.Popen(
        ["/bin/sh", "-s"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert shell.stdin is not None
        shell.stdin.write(build_script(plan).encode())
        shell.stdin.close()
        deadline = time.monotonic() + 5
        while "sleep 1" not in _session_commands(shell.pid):  # the heartbeat is running
            assert time.monotonic() < deadline, _session_commands(shell.pid)
            time.sleep(0.05)
        shell.kill()
        shell.wait()
        deadline = time.monotonic() + 4
        while "sleep 1" in _session_commands(shell.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "sleep 1" not in _session_commands(shell.pid)
    finally:  # the section's `timeout` runs in a process group of its own
        for pid in _session(shell.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
