"""The serve failure classifier over engine logs from public bug reports (issue 29, item 5).

Each tests/fixtures/serve/<engine>/<case>.log is an excerpt of a real log; its .source sidecar
names the report, the code the log must get and a piece of the line the verdict must quote.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudash.serve import catalog, classify, logscan
from gpudash.serve.classify import Classifier, classify_file, stall_cause

FIXTURES = Path(__file__).parent.parent / "fixtures" / "serve"


def sidecar(log: Path) -> dict[str, str]:
    meta = {}
    for row in log.with_suffix(".source").read_text().splitlines():
        key, _, value = row.partition(": ")
        meta[key] = value
    return meta


LOGS = sorted(FIXTURES.glob("*/*.log"))
FAILING = [log for log in LOGS if sidecar(log)["code"] != "none"]


def engine_of(log: Path) -> str:
    return log.parent.name if log.parent.name != "any" else "vllm"


def test_every_fixture_names_its_public_source() -> None:
    assert len(LOGS) >= 30
    for log in LOGS:
        meta = sidecar(log)
        source = meta.get("url") or meta.get("captured", "")
        assert source.startswith(("https://github.com/", "on the gpudash")), log
        assert meta["what"] and meta["code"], log


def test_fixtures_cover_every_code_in_both_engines_where_reports_have_them() -> None:
    seen = {(log.parent.name, sidecar(log)["code"]) for log in FAILING}
    codes = {code for _, code in seen}
    assert codes == set(catalog.CODES)
    both = ("port_in_use", "gpu_busy", "oom", "kv_cache", "nccl", "model_access", "arch", "driver")
    for code in both:
        assert ("sglang", f"serve.{code}") in seen and ("vllm", f"serve.{code}") in seen, code
    for code in ("jit", "fabric"):
        assert ("vllm", f"serve.{code}") in seen, code


@pytest.mark.parametrize("log", FAILING, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_recorded_failure_gets_its_code_and_quotes_its_line(log: Path) -> None:
    meta = sidecar(log)
    lines = log.read_text().splitlines()
    fed = Classifier(engine_of(log))
    for line in lines:
        fed.feed(line)
    verdict = fed.result()
    assert verdict is not None, log
    assert verdict.code == meta["code"]
    assert meta["quote"] in verdict.line
    assert lines[verdict.lineno - 1].strip().startswith(verdict.line[:60])
    assert verdict.source.startswith("https://github.com/")
    assert verdict.why and verdict.fix
    # The file path (chunked, prefiltered) gives the same verdict.
    assert classify_file(str(log), engine_of(log)) == verdict


@pytest.mark.parametrize(
    "log", [p for p in LOGS if sidecar(p)["code"] == "none"], ids=lambda p: p.stem
)
def test_good_and_unknown_logs_get_no_verdict(log: Path) -> None:
    fed = Classifier(engine_of(log))
    for line in log.read_text().splitlines():
        fed.feed(line)
    assert fed.result() is None
    assert classify_file(str(log), engine_of(log)) is None
    if "first_error" in sidecar(log):
        assert (fed.first_error() or "").startswith(sidecar(log)["first_error"])


def test_the_first_root_cause_wins_over_vllms_pointer_back_to_it(tmp_path: Path) -> None:
    """vLLM's last line says 'See root cause above': the verdict is the OOM above it."""
    oom = (FIXTURES / "vllm" / "oom-load-28143.log").read_text()
    pointer = (FIXTURES / "vllm" / "engine-core-failed-19415.log").read_text()
    nccl = (FIXTURES / "sglang" / "nccl-4289.log").read_text()
    log = tmp_path / "log"
    log.write_text(oom + nccl + pointer)
    verdict = classify_file(str(log), "vllm")
    assert verdict is not None and verdict.code == "serve.oom" and verdict.lineno == 1
    alone = Classifier("vllm")
    for line in pointer.splitlines():
        alone.feed(line)
    assert alone.result() is None and alone.first_error() is None


def test_a_traceback_source_line_is_not_quoted_but_the_exception_after_it() -> None:
    fed = Classifier("vllm")
    for line in (FIXTURES / "vllm" / "kv-cache-blocks-qwen12.log").read_text().splitlines():
        fed.feed(line)
    verdict = fed.result()
    assert verdict is not None and verdict.lineno == 2
    assert verdict.line.startswith("ValueError:")


def test_line_numbers_count_every_line_before_the_verdict_in_a_big_file(tmp_path: Path) -> None:
    healthy = (FIXTURES / "vllm" / "good-startup-29335.log").read_bytes()
    error = (FIXTURES / "vllm" / "port-in-use-7514.log").read_bytes()
    copies = (3 * logscan.CHUNK) // len(healthy) + 1
    log = tmp_path / "big.log"
    log.write_bytes(healthy * copies + error + healthy * 3)
    verdict = classify_file(str(log), "vllm")
    assert verdict is not None and verdict.code == "serve.port_in_use"
    assert verdict.lineno == healthy.count(b"\n") * copies + 3


@pytest.mark.parametrize("log", FAILING, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_chunk_ends_anywhere_in_a_failure_change_nothing(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With small chunks, a failure placed across every chunk end gets the line-by-line
    verdict: same code, same quoted line, same line number (the failure is followed by less
    than a chunk, as an engine that exits leaves it)."""
    monkeypatch.setattr(logscan, "CHUNK", 4096)  # > any fixture and its tail
    healthy = (FIXTURES / "vllm" / "good-startup-29335.log").read_bytes()
    failure = log.read_bytes()
    for pad in range(0, 8400, 263):
        data = healthy * 3 + b"x" * pad + b"\n" + failure + healthy[: pad % 700]
        path = tmp_path / "log"
        path.write_bytes(data)
        fed = Classifier("vllm")
        for line in data.decode().split("\n"):
            fed.feed(line)
        assert classify_file(str(path), "vllm") == fed.result(), pad


@pytest.mark.parametrize(
    "log", [p for p in FAILING if b"rror" in p.read_bytes()], ids=lambda p: p.stem
)
def test_a_failure_in_the_middle_of_a_big_log_is_found_where_it_says_error(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Far from the end, a failure is found through the chunk that holds `rror` (its own, or
    its neighbour's), wherever the chunk ends fall."""
    monkeypatch.setattr(logscan, "CHUNK", 4096)
    healthy = (FIXTURES / "vllm" / "good-startup-29335.log").read_bytes()
    for pad in range(0, 4096, 331):
        data = healthy * 2 + b"y" * pad + b"\n" + log.read_bytes() + healthy * 12
        path = tmp_path / "log"
        path.write_bytes(data)
        fed = Classifier("vllm")
        for line in data.decode().split("\n"):
            fed.feed(line)
        assert classify_file(str(path), "vllm") == fed.result(), pad


def test_hostile_text_is_judged_without_error_and_quoted_clean(tmp_path: Path) -> None:
    line = "\x1b]0;pwned\x07\u202eOSError: [Errno 98] Address already in use\x1b[31m" + "x" * 99999
    fed = Classifier("sglang")
    fed.feed(line)
    verdict = fed.result()
    assert verdict is not None and verdict.code == "serve.port_in_use"
    assert "\x1b" not in verdict.line and "\u202e" not in verdict.line
    assert len(verdict.line) <= classify.MAX_QUOTE
    for text in ("", "\n", "\x00" * 10, "rror" * 5000, "\udcff", "é" * 10):
        Classifier("vllm").feed(text)
    log = tmp_path / "bin"
    log.write_bytes(bytes(range(256)) * 1000 + b"\xff\xfeNCCL error\n")
    assert classify_file(str(log), "vllm") is not None
    assert classify_file(str(tmp_path / "missing"), "vllm") is None
    (tmp_path / "empty").write_bytes(b"")
    assert classify_file(str(tmp_path / "empty"), "vllm") is None


def test_a_stall_in_a_flashinfer_jit_load_is_named_as_a_stale_jit_lock() -> None:
    lines = (FIXTURES / "any" / "jit-lock-flashinfer972.log").read_text().splitlines()
    cause = stall_cause([*lines, "(a blank progress line)"], last_lineno=812)
    assert cause is not None and cause.code == "serve.jit" and "Loading JIT ops" in cause.line
    assert cause.lineno == 811 and cause.source.endswith("flashinfer/issues/972")
    assert stall_cause(lines).lineno == 0
    assert stall_cause(["Capture cuda graph begin"]) is None


def test_every_signature_holds_a_prefilter_key_and_a_known_code_with_a_source() -> None:
    for sig in catalog.SIGNATURES:
        assert sig.code in catalog.CODES
        assert sig.source.startswith("https://github.com/")
        assert any(key in needle for needle in sig.needles for key in catalog.KEYS), sig


def test_the_modules_import_on_the_host_without_gpudash(tmp_path: Path) -> None:
    """They travel as job files: importable as top-level modules with only stdlib, and the
    parallel readers of a big log run there too (the system Python here has no gpudash)."""
    src = Path(classify.__file__).parent
    files = tmp_path / "files"
    files.mkdir()
    for name in ("catalog.py", "classify.py", "logscan.py", "phases.py"):
        text = (src / name).read_text()
        ast.parse(text, feature_version=(3, 9))  # the serving venv's Python may be 3.9
        (files / name).write_text(text)
    log = tmp_path / "log"
    healthy = (FIXTURES / "vllm" / "good-startup-29335.log").read_bytes()
    log.write_bytes(healthy * 200 + (FIXTURES / "sglang" / "nccl-4289.log").read_bytes())
    code = (
        f"import sys; sys.modules['gpudash'] = None; sys.path.insert(0, {str(files)!r})\n"
        "import classify, logscan, phases\n"
        "c = classify.Classifier('vllm'); c.feed('RuntimeError: NCCL error: x')\n"
        "logscan.CHUNK = 8192\n"
        f"v = classify.classify_file({str(log)!r}, 'sglang', workers=3)\n"
        "print(c.result().code, phases.PhaseTracker('sglang').feed('Capture cuda graph begin'),"
        " v.code, v.lineno)\n"
    )
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [python, "-I", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lineno = str(healthy.count(b"\n") * 200 + 13)  # the RuntimeError, line 13 of the excerpt
    assert out.stdout.split() == ["serve.nccl", "graph_capture", "serve.nccl", lineno], out.stderr


def test_the_real_h200_serve_log_is_no_failure_though_it_holds_a_traceback() -> None:
    """The lent H200's `transformers serve` (tests/fixtures/h200-device/serve, README there)
    served and was READY; its log holds the advisory /v1/models traceback (CacheNotFound),
    which must not be taken for the engine's failure."""
    from tests.support import FIXTURES

    log = FIXTURES / "h200-device" / "serve" / "engine-tail.log"
    assert "CacheNotFound" in log.read_text()
    assert classify_file(str(log), "transformers") is None
