"""Transports: ssh (asyncssh), local (subprocess + NVML), replay (a saved directory)."""

from gpudash.transport import nox509, sharedlibs

sharedlibs.install()  # before any module here imports asyncssh
nox509.install()  # likewise: asyncssh loads without X.509 (nox509.py says why)
