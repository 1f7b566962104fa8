"""GPU identities (PCI device id / name -> compute capability), with their sources.

The table itself is the leaf module `gpudash.gpu_identity`: the probe reads it to name a GPU's
cc where the driver does not say, and importing it from here would load the checks package on
the probe's path. Here it stands with the other facts tables, for those who look for it there.
"""

from gpudash.gpu_identity import BY_DEVICE_ID, BY_NAME, BY_PCI_NAME, GPUS

__all__ = ["BY_DEVICE_ID", "BY_NAME", "BY_PCI_NAME", "GPUS"]
