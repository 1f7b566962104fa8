"""The serve classifier's worker processes (gpudash.serve.logscan): a big log cut in ranges
gives the verdict of one reader. In the perf tier: each case starts worker processes (~1-1.5 s
on a 2-core machine), which kept the unit tier over its 15 s (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudash.serve import logscan
from gpudash.serve.classify import classify_file

FIXTURES = Path(__file__).parent.parent / "fixtures" / "serve"
LOGS = sorted(FIXTURES.glob("*/*.log"))


def recorded_code(log: Path) -> str:
    """The verdict code the fixture's sidecar records ("none" for a healthy log)."""
    for row in log.with_suffix(".source").read_text().splitlines():
        key, _, value = row.partition(": ")
        if key == "code":
            return value
    return "none"


FAILING = [log for log in LOGS if recorded_code(log) != "none"]


@pytest.mark.parametrize("workers", [2, 3])
def test_parallel_readers_give_the_verdict_of_one(
    workers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big log cut in ranges read by worker processes: same code, line and line number as
    one reader, for failures at the end and one in an early range, and none for a healthy log."""
    monkeypatch.setattr(logscan, "CHUNK", 4096)
    healthy = (FIXTURES / "vllm" / "good-startup-29335.log").read_bytes()
    path = tmp_path / "log"
    for log in FAILING[::4]:
        path.write_bytes(healthy * 40 + log.read_bytes() + healthy[:500])
        alone = classify_file(str(path), "vllm", workers=1)
        assert alone is not None and classify_file(str(path), "vllm", workers=workers) == alone
    early = (FIXTURES / "vllm" / "port-in-use-7514.log").read_bytes()
    path.write_bytes(healthy * 3 + early + healthy * 60)
    verdict = classify_file(str(path), "vllm", workers=workers)
    assert verdict is not None and verdict.code == "serve.port_in_use"
    assert verdict.lineno == healthy.count(b"\n") * 3 + 3
    path.write_bytes(healthy * 60)
    assert classify_file(str(path), "vllm", workers=workers) is None
