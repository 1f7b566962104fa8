"""Probe sections: one module per section, each with NAME, TIMEOUT, BODY, parse and summary.

Registered by name in `gpudash.probe.registry.SECTION_NAMES`."""
