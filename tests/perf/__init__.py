"""The perf tier: pure but heavy proofs (parsers linear in their input, over MBs)."""
