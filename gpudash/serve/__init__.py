"""Serve: launch an inference engine on a host and declare it ready only once it generated.

Some modules here travel to the host and run there with the serving venv's python (stdlib
only, no gpudash imports; notes in each); the others (preflight) run in gpudash.
"""
