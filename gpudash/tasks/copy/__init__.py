"""The copy task, a directory from one host to another: directly (two detached jobs) or,
with `via = "gpudash"`, streamed through gpudash; to many destinations at once as a chain.

kind.py            the copy as task events, beside the cancel (what `fleet_run` runs for it)
params.py          its parameters, and the check that `from` names a configured host
direct.py          host to host: one-use key, both jobs launched and followed
direct_scripts.py  their shell: destination job, receiving end, source job
fanout.py          one source feeding many destinations in one run (`CopyGroup`)
fanout_scripts.py  its shell: the chain, then each destination's own completion
peer.py            a model from a peer host instead of a download (the `model` task's `from`)
caches.py          the JIT caches a copy brings along (`params.caches`)
transfer.py        via gpudash: source tar -> gpudash -> destination tar, verified, renamed
scripts.py         the shell of that relayed copy, and the manifests both ends print, compared
"""
