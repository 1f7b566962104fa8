"""Transports: ssh (asyncssh), local (subprocess + NVML), replay (a saved directory)."""

from gpudash.transport import sharedlibs

sharedlibs.install()  # before any module here imports asyncssh
