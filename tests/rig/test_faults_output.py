"""A host whose tools print too much or nonsense: 50 MB, binary garbage, invalid UTF-8, lines
of 1 MB. gpudash's memory stays bounded, the section says what happened, the connection and
every other section and host carry on.

Run through `gpudash probe --json` as a subprocess so its peak RSS is its own (faultprobe).
"""

from __future__ import annotations

from pathlib import Path

from gpudash.probe.stream import MAX_LINE_CHARS, MAX_SECTION_CHARS, FrameReader
from tests.support.faultprobe import assert_fully_probed, others_fully_probed, probe_cli
from tests.support.netrig import NetRig

# `gpudash probe --json` of four quiet hosts peaks at ~45 MiB here. A flood is capped at
# 4 Mi characters per section, but random bytes decode to wide characters (up to 4 bytes
# each), held a few times over while parsing: ~135 MiB measured for 5 MB of /dev/urandom,
# the same for 500 MB. The bound is issue 6's memory budget for a probe run.
RSS_LIMIT_KIB = 200 * 1024
MB = 1024 * 1024
NONCE = "f00d"


def probe_with_gpu_tool(rig: NetRig, tmp_path: Path, body: str) -> dict:
    rig.hosts[1].write_tool("nvidia-smi", "#!/bin/sh\n" + body)
    run = probe_cli(rig, rig.config_toml(section_timeout=15), workdir=tmp_path, timeout=40)
    others_fully_probed(run.hosts, "h1")
    h1 = run.hosts["h1"]
    assert (h1["state"], h1["error"]) == ("ready", None)  # the connection survived
    for name in ("system", "toolkit", "env", "models", "network"):
        assert h1["sections"][name]["error"] is None, h1["sections"][name]
    assert run.max_rss_kib < RSS_LIMIT_KIB, f"peak RSS {run.max_rss_kib // 1024} MiB"
    return h1


def test_50_mb_of_output_is_truncated_with_a_reason_in_bounded_memory(
    netrig: NetRig, tmp_path: Path
):
    h1 = probe_with_gpu_tool(
        netrig, tmp_path, f"yes 'GPU 0: NVIDIA H200 (UUID: GPU-0)' | head -c {50 * MB}\n"
    )
    assert h1["sections"]["gpus"]["error"] == "output too large: truncated"


def test_binary_garbage_and_invalid_utf8_do_not_break_the_connection(
    netrig: NetRig, tmp_path: Path
):
    body = (
        f"printf 'NVIDIA \\377\\376\\000 H200\\n\\033]52;c;aGk=\\007'; head -c {MB} /dev/urandom\n"
    )
    h1 = probe_with_gpu_tool(netrig, tmp_path, body)
    gpus = h1["sections"]["gpus"]["data"]
    assert gpus["gpus"] == []  # nothing invented from the noise, and the reason says why:
    (note,) = [n for n in gpus["notes"] if "printed no GPU rows" in n]
    assert note.startswith("nvidia-smi --query-gpu printed no GPU rows: NVIDIA")
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in note)  # escapes neutralised


def test_a_1_mb_line_is_cut_and_said_so(netrig: NetRig, tmp_path: Path):
    body = f"head -c {MB} /dev/zero | tr '\\0' x; echo; cat {_capture(netrig)}\n"
    h1 = probe_with_gpu_tool(netrig, tmp_path, body)
    assert h1["sections"]["gpus"]["error"] == "output too large: truncated"


def test_50_mb_on_one_line_is_bounded_too(netrig: NetRig, tmp_path: Path):
    body = f"head -c {50 * MB} /dev/zero | tr '\\0' x\n"
    h1 = probe_with_gpu_tool(netrig, tmp_path, body)
    assert h1["sections"]["gpus"]["error"] == "output too large: truncated"


def test_after_the_flood_the_same_host_probes_clean(netrig: NetRig, tmp_path: Path):
    probe_with_gpu_tool(netrig, tmp_path, f"head -c {5 * MB} /dev/urandom\n")
    netrig.reset_files(netrig.hosts[1])
    run = probe_cli(netrig, netrig.config_toml(), workdir=tmp_path)
    assert_fully_probed(run.hosts["h1"])


def _capture(rig: NetRig) -> Path:
    """The verbatim `nvidia-smi` capture installed on the rig's hosts (fakegpu)."""
    return rig.hosts[1].bin_dir.parent / "captures" / "smi.txt"


def frames(*sections: tuple[str, bytes]) -> bytes:
    out = b""
    for name, body in sections:
        out += f"@@gpudash:{NONCE}:begin:{name}\n".encode() + body
        out += f"\n@@gpudash:{NONCE}:end:{name}:0\n".encode()
    return out


def read(data: bytes, chunk: int = 65536) -> list:
    reader = FrameReader(NONCE)
    out = []
    for i in range(0, len(data), chunk):
        out += reader.feed(data[i : i + chunk])
    return out + reader.finish()


def test_a_cut_line_marks_its_section_and_the_lines_after_it_are_kept():
    for chunk in (1000, 65536, 4 * MB):  # the long line whole in one read, or across many
        (gpus, env) = read(frames(("gpus", b"x" * MB + b"\nafter"), ("env", b"ok")), chunk)
        assert (gpus.name, gpus.rc, gpus.truncated) == ("gpus", 0, True)
        assert gpus.text == "x" * MAX_LINE_CHARS + "\nafter"
        assert (env.text, env.truncated) == ("ok", False)


def test_past_the_cap_a_flood_is_dropped_and_the_next_marker_still_found():
    flood = b"GPU 0: NVIDIA H200\n" * (MAX_SECTION_CHARS // 10)
    data = frames(("gpus", flood), ("env", b"ok"))
    for chunk in (4093, 65536):  # odd sizes split the end marker across two reads
        gpus, env = read(data, chunk)
        assert gpus.truncated and len(gpus.text) <= MAX_SECTION_CHARS
        assert flood.decode().startswith(gpus.text)  # the kept part is the head, unbroken
        assert (env.name, env.rc, env.text) == ("env", 0, "ok")
