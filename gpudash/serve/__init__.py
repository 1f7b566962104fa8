"""Serving an inference engine on a host (issue 29): launch it, and declare it ready only once
it really generated.

The modules here that travel to the host (supervisor, engine_run, ladder, ready, command,
hostcheck, statefile, phases, classify, catalog) are stdlib-only, import no other gpudash
module and run under the serving venv's Python (3.9+): each is importable both as
`gpudash.serve.X` and as a top-level `X` from the job's files/ folder. `preflight` runs in
gpudash only (it reads the probe's results).
"""
