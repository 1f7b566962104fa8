"""Probe sections: one module per section, each with NAME, TIMEOUT, BODY and parse."""
