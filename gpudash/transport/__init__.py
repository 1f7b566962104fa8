"""Transports: ssh (asyncssh), local (subprocess + NVML), replay (a saved directory)."""
