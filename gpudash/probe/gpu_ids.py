"""Compute capability without NVML: from the PCI device id or a truncated nvidia-smi name.

The nvidia-smi table cuts names at 20-odd characters ("NVIDIA RTX PRO 6000 Blac..."); when
`--query-gpu=compute_cap` is not there, the PCI device id (`nvidia-smi -q` "Device Id",
`lspci -n`) or an unambiguous name prefix still tells the cc. Every row names its source:
the PCI ID Repository, the driver README, NVIDIA's CUDA GPUs page or a real capture.
"""

from __future__ import annotations

from gpudash.gpu_identity import BY_DEVICE_ID, BY_NAME, BY_PCI_NAME

# The table and its sources are the leaf gpudash.gpu_identity (re-exported beside the other
# facts as gpudash.checks.facts.gpu_identity), a
# module that imports nothing, so the probe may read it).
PCI_DEVICE_CC: dict[str, tuple[str, str]] = BY_DEVICE_ID
NAME_CC: dict[str, str] = BY_NAME


def cc_from_pci_id(device_id: str | None) -> str | None:
    """`0x2BB410DE` (nvidia-smi -q), `10de:2bb4` or `2bb4` (lspci -n) -> "12.0", else None."""
    text = (device_id or "").strip().lower()
    if text.startswith("0x") and len(text) == 10:  # nvidia-smi: device id then vendor id
        dev, vendor = text[2:6], text[6:10]
        if vendor != "10de":
            return None
    elif ":" in text:
        vendor, _, dev = text.partition(":")
        if vendor != "10de":
            return None
    else:
        dev = text
    row = PCI_DEVICE_CC.get(dev[:4])
    return row[1] if row else None


def cc_from_name(name: str | None) -> str | None:
    """A full or truncated ("...") name -> cc when every known name it could be agrees.

    Full names are the driver's (nvidia-smi) or pci.ids' (lspci, with or without "NVIDIA ")."""
    text = (name or "").strip()
    if not text:
        return None
    if text.endswith("..."):
        stem = text[:-3]
        if len(stem) < 20:  # nvidia-smi's table keeps 24 characters; shorter is not its cut
            return None
        ccs = {cc for full, cc in NAME_CC.items() if full.startswith(stem)}
    else:
        bare = text.removeprefix("NVIDIA ")
        ccs = {c for c in (NAME_CC.get(text), BY_PCI_NAME.get(bare)) if c is not None}
    return ccs.pop() if len(ccs) == 1 else None
