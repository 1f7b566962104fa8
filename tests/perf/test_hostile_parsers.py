"""Every parser of remote or saved text is total, and real captures survive a save round trip.

The tool parsers (topo, smi, query, nvlink, nvcc) and the section parsers have their totality
tests in test_never_raises.py beside this file; this file covers the rest of what reads
untrusted text: the
frame reader, the part splitter, the task status lines, version specs, os-release, the text
cleaner and the `--save` loader. Then every saved capture in tests/fixtures is replayed,
saved again and replayed again through the real CLI: the JSON must not change. (tests/perf:
hypothesis examples and CLI processes, too slow for the unit tier's seconds.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudash.model import NOT_SAVED
from gpudash.probe.parts import split_parts
from gpudash.probe.sections.system import parse_os_release
from gpudash.probe.stream import FrameReader
from gpudash.saved import load_host
from gpudash.tasks.jobs import parse_list, parse_status
from gpudash.text import clean, clean_line, strip_escapes
from gpudash.versions import Spec, parse_version
from tests.support import FIXTURES

FIX = FIXTURES
NONCE = "0123456789abcdef"
MARK = f"@@gpudash:{NONCE}"

# Text that looks like what hosts print, with markers, escapes and odd digits mixed in.
_ATOMS = st.sampled_from(
    [f"{MARK}:begin:gpus", f"{MARK}:end:gpus:0", f"{MARK}:begin:system", f"{MARK}:end:x:-1",
     f"{MARK}:part:q", f"{MARK}:rc:q:0", f"{MARK}:rc:q:²", f"{MARK}:fatal:mktemp",
     "@@gpudash:ffff:begin:gpus", "\x1b]0;pwned\x07", "\x1b]52;c;ZXZpbA==\x07", "\x1b[2J",
     "\x1b[1;1H", "[bold red]x[/]", "\r", "\n", "\t", "\x00", "\x9b31m", "²", "٣", "-", " ",
     "rc", "state", "task", "size", "wpid", "run"]
)  # fmt: skip
_NOISE = st.lists(st.one_of(_ATOMS, st.text(max_size=12)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_NOISE, st.lists(st.integers(1, 64), min_size=1, max_size=20))
def test_the_frame_reader_never_raises_and_chunking_does_not_change_what_it_reads(
    text: str, cuts: list[int]
) -> None:
    data = text.encode("utf-8", errors="surrogatepass")
    whole = FrameReader(NONCE)
    expected = whole.feed(data) + whole.finish()
    chunked, out, at = FrameReader(NONCE), [], 0
    for cut in cuts * (len(data) // max(1, sum(cuts)) + 1):
        out += chunked.feed(data[at : at + cut])
        at += cut
    out += chunked.feed(data[at:]) + chunked.finish()
    assert out == expected
    assert all(s.name for s in out)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_the_frame_reader_takes_arbitrary_bytes(data: bytes) -> None:
    reader = FrameReader(NONCE)
    reader.feed(data)
    reader.finish()


@settings(max_examples=300, deadline=None)
@given(_NOISE)
def test_split_parts_never_raises_and_loses_no_line_outside_a_marker(text: str) -> None:
    parts = split_parts(text, NONCE)
    for name, part in parts.items():
        assert part.name == name
    kept = "\n".join(p.text for p in parts.values())
    for line in text.split("\n"):
        if line.strip() and not line.startswith(f"{MARK}:"):
            assert line in kept


@settings(max_examples=300, deadline=None)
@given(_NOISE)
def test_task_status_lines_never_raise(text: str) -> None:
    status = parse_status("t", text)
    assert status.rc is None or isinstance(status.rc, int)
    assert isinstance(status.size, int)
    for job in parse_list(text):
        assert job.task


@pytest.mark.parametrize("rc", ["²", "--5", "٣x", "1_0"])
def test_an_exit_status_that_is_not_an_ascii_number_is_unknown_not_a_crash(rc: str) -> None:
    status = parse_status("t", f"state finished\nrc {rc} done\nsize ²\nwpid ٣")
    assert status.rc is None and status.size == 0 and status.wpid is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(_NOISE, st.from_regex(r"[<>=!]{0,2}\d{1,12}(\.\d{1,12}){0,3}(\.\*)?,?")))
def test_versions_and_specs_never_raise(text: str) -> None:
    parse_version(text)
    spec = Spec.parse(text)
    if spec is not None:
        spec.matches("580.65.06")
        spec.matches(text)


@settings(max_examples=200, deadline=None)
@given(_NOISE)
def test_os_release_never_raises(text: str) -> None:
    for key, value in parse_os_release(text).items():
        assert key.isupper() or "_" in key or key[0].isalpha()
        assert isinstance(value, str)


_CONTROL = {chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}


@settings(max_examples=400, deadline=None)
@given(_NOISE)
def test_cleaned_text_has_no_escape_or_control_character_left(text: str) -> None:
    shown = clean(text)
    assert not _CONTROL & set(shown)
    assert clean(shown) == shown
    line = clean_line(text)
    assert not (_CONTROL | {"\n", "\t"}) & set(line)
    strip_escapes(text)


_JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        _JSONISH,
        st.fixed_dictionaries(
            {
                "host": _JSONISH,
                "sections": st.one_of(
                    _JSONISH,
                    st.dictionaries(
                        st.sampled_from(["gpus", "../../x", "a/b", "", "system"]),
                        st.one_of(
                            _JSONISH,
                            st.fixed_dictionaries(
                                {
                                    "rc": _JSONISH,
                                    "parts": st.one_of(
                                        _JSONISH,
                                        st.dictionaries(
                                            st.sampled_from(["q", "..", "/etc", "_stray", "x.1"]),
                                            _JSONISH,
                                        ),
                                    ),
                                }
                            ),
                        ),
                    ),
                ),
            }
        ),
    )
)
def test_a_saved_dir_loads_or_fails_with_one_error_naming_the_file(meta: object) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "host"
        directory.mkdir()
        (directory / "meta.json").write_text(json.dumps(meta))
        (Path(tmp) / "x.q.txt").write_text("outside the saved dir\n")
        try:
            saved = load_host(directory)
        except ValueError as exc:
            assert str(directory / "meta.json") in str(exc)
            return
        for rc, _error, parts in saved.sections.values():
            assert rc is None or isinstance(rc, int)
            for part in parts.values():
                assert "outside the saved dir" not in part.text
                assert part.rc is None or isinstance(part.rc, int)


def _gpudash(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "gpudash", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    assert out.returncode in (0, 1), out.stderr
    assert not out.stderr.strip() or "Traceback" not in out.stderr
    return json.loads(out.stdout)


def _stable(doc: dict) -> dict:
    """The probe JSON without timings (the only values a replay legitimately changes): the
    sections' and hosts' elapsed time and the document's `generated_at`."""
    doc.pop("generated_at", None)
    for host in doc["hosts"]:
        host.pop("elapsed_s")
        for section in host["sections"].values():
            section.pop("elapsed_s")
    return doc


@pytest.mark.parametrize(
    "capture",
    [
        FIX / "saved",
        FIX / "h200-device" / "save-nvml",
        FIX / "h200-device" / "save-smi",
        FIX / "h200-device" / "health" / "save-smi",
    ],
    ids=["saved-fleet", "h200-nvml", "h200-smi", "h200-health-smi"],
)
def test_real_captures_parse_the_same_after_a_save_and_replay_round_trip(
    capture: Path, tmp_path: Path
) -> None:
    first = _gpudash("probe", "--replay", str(capture), "--json", "--save", str(tmp_path / "a"))
    second = _gpudash("probe", "--replay", str(tmp_path / "a"), "--json")
    assert len(first["hosts"]) >= 1
    assert _stable(second) == _stable(first)
    parsed = [s for h in first["hosts"] for s in h["sections"].values() if s["data"]]
    assert parsed, "the captures must parse to something"


def _within(want: object, got: object) -> bool:
    """`got` holds everything `want` does (dict keys may be added, nothing else differs)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            k in got and _within(v, got[k]) for k, v in want.items()
        )
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(map(_within, want, got))
    return want == got


@pytest.mark.parametrize("capture", ["h200-device", "h200-device/health"])
@pytest.mark.parametrize("kind", ["nvml", "smi"])
def test_the_h200_capture_parses_to_the_json_stored_beside_it(capture: str, kind: str) -> None:
    """Both real H200 captures; the first predates the health section, so a section it never
    had replays as no data (an error saying so), never as a parse of nothing."""
    stored = json.loads((FIX / capture / f"probe-{kind}.json").read_text())
    replayed = _gpudash("probe", "--replay", str(FIX / capture / f"save-{kind}"), "--json")
    want = {n: s["data"] for n, s in stored["hosts"][0]["sections"].items()}
    sections = replayed["hosts"][0]["sections"]
    got = {n: s["data"] for n, s in sections.items()}
    # A field a later parser adds may appear; every value the capture's own run printed stays.
    assert _within(want, {n: got[n] for n in want})
    assert all(got[n] is None for n in set(got) - set(want))
    if capture.endswith("health"):
        assert want["health"]["gpus"]
    # A section added to gpudash after the capture says so, with no data and no finding.
    assert sections["verify"] == {**sections["verify"], "data": None, "error": NOT_SAVED}
