"""gpudash's tests, by tier: unit (pure), ssh (real sshd and local processes), app (Textual
and tmux), rig (hosts in network namespaces); helpers in tests.support."""
