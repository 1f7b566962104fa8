"""Benchmarks, each a ratio against a baseline measured in the same run.

Run from the repository root as `python -m bench.NAME`, so `tests.support` imports as a package.
Each bench declares `SMOKE`, the argument lists that run it in seconds; tests/perf/
test_bench_smoke.py runs every one, so a change that breaks a bench fails a test.
"""
