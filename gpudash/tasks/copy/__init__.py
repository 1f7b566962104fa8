"""The copy task, a directory from one host to another through gpudash (not a detached job).

kind.py       the copy as task events, beside the cancel (what `fleet_run` runs for it)
params.py     its parameters, and the check that `from` names a configured host
scripts.py    the shell on both hosts, and the manifests they print, compared
transfer.py   one transfer: source tar -> gpudash -> destination tar, verified, renamed
"""
