"""Helpers the tests and benchmarks share: real sshd hosts, the network rig, fake GPU tools
printing real captures, loopback HTTP servers, wheels. Imported as `tests.support.NAME`."""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
"""tests/fixtures: real captures, each with its source."""

ROOT = FIXTURES.parent.parent
"""The repository's root."""
