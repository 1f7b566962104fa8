"""The copy task, a directory from one host to another: directly (two detached jobs) or,
with `via = "gpudash"`, streamed through gpudash.

kind.py       the copy as task events, beside the cancel (what `fleet_run` runs for it)
direct.py     host to host: one-use key, both jobs launched and followed
direct_scripts.py  their shell: destination job, receiving end, source job
params.py     its parameters, and the check that `from` names a configured host
scripts.py    the shell on both hosts, and the manifests they print, compared
transfer.py   one transfer: source tar -> gpudash -> destination tar, verified, renamed
"""
