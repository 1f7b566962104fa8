"""The serve failure classifier on a big engine log (issue 29: a 1 GB log in under 2 s, with
bounded memory), against baselines on the same file in the same run. On a host of 4 CPUs or
more a log of 256 MB or more is read by up to 4 processes (gpudash/serve/logscan.py).

The log is the recorded start-ups of tests/fixtures/serve repeated to SIZE MB; "healthy" has
no error, "failing" ends with vLLM's OOM (so the line number is counted too). Baselines: reading
the file (`cat FILE > /dev/null`) and `grep -c rror FILE`. Peak RSS is the largest of the
classifying process and its readers (ru_maxrss), next to an empty process's.

    python -m bench.bench_serve_classify [SIZE_MB [WORKERS]]   (1024; 0 = as logscan decides)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "serve"
HEALTHY = (
    "vllm/good-startup-29335.log",
    "sglang/good-startup-2468.log",
    "vllm/good-startup-19794.log",
    "vllm/backend-flash-attn-45288.log",
)
FAILURE = "vllm/oom-load-28143.log"
CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from gpudash.serve.classify import classify_file
start = time.perf_counter()
verdict = classify_file(sys.argv[2], "vllm", int(sys.argv[3])) if sys.argv[2] else None
took = time.perf_counter() - start
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"s": took, "rss_kb": rss,
                  "code": verdict and verdict.code, "lineno": verdict and verdict.lineno}))
"""


def write_log(path: Path, size_mb: int, failing: bool) -> int:
    block = b"".join((FIXTURES / name).read_bytes() for name in HEALTHY) * 64
    with path.open("wb") as f:
        for _ in range(max(1, (size_mb << 20) // len(block))):
            f.write(block)
        if failing:
            f.write((FIXTURES / FAILURE).read_bytes())
    return path.stat().st_size


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def classify(path: str, workers: int = 0) -> dict:
    argv = [sys.executable, "-c", CHILD, str(ROOT), path, str(workers)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def run(size_mb: int, workers: int = 0) -> list[dict]:
    """One row per log shape: sizes, seconds, baselines and ratios, peak RSS."""
    rows = []
    empty_rss = classify("")["rss_kb"]
    with tempfile.TemporaryDirectory() as tmp:
        for failing in (False, True):
            path = Path(tmp) / "engine.log"
            size = write_log(path, size_mb, failing)
            timed(["cat", str(path)])  # warm the page cache for every contender alike
            cat = min(timed(["sh", "-c", f"cat '{path}' > /dev/null"]) for _ in range(2))
            grep = min(timed(["grep", "-c", "rror", str(path)]) for _ in range(2))
            result = min((classify(str(path), workers) for _ in range(2)), key=lambda r: r["s"])
            rows.append(
                {
                    "log": "failing" if failing else "healthy",
                    "mb": size / 1e6,
                    "classify_s": result["s"],
                    "cat_s": cat,
                    "grep_s": grep,
                    "x_cat": result["s"] / cat,
                    "x_grep": result["s"] / grep,
                    "rss_mb": result["rss_kb"] / 1024,
                    "rss_empty_mb": empty_rss / 1024,
                    "code": result["code"],
                    "lineno": result["lineno"],
                }
            )
            path.unlink()
    return rows


SMOKE: tuple[tuple[str, ...], ...] = (("8",),)
"""An 8 MB log: seconds, for tests/perf/test_bench_smoke.py."""


def main() -> None:
    size_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print(
        f"{'log':8} {'MB':>7} {'classify s':>10} {'cat s':>6} {'grep s':>6} "
        f"{'x cat':>6} {'x grep':>6} {'RSS MB':>7} {'(empty)':>7}  verdict"
    )
    for r in run(size_mb, workers):
        print(
            f"{r['log']:8} {r['mb']:7.0f} {r['classify_s']:10.2f} {r['cat_s']:6.2f} "
            f"{r['grep_s']:6.2f} {r['x_cat']:6.1f} {r['x_grep']:6.2f} {r['rss_mb']:7.1f} "
            f"{r['rss_empty_mb']:7.1f}  {r['code']} line {r['lineno']}"
        )
    print(f"cpus: {os.cpu_count()}, workers: {workers or 'as logscan decides'}")


if __name__ == "__main__":
    main()
