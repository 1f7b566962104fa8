"""Benchmarks, each a ratio against a baseline measured in the same run.

Run from the repository root as `python -m bench.NAME`, so `tests.support` imports as a package.
"""
