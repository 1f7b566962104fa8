"""Compute capability without NVML: from the PCI device id or a truncated nvidia-smi name.

The nvidia-smi table cuts names at 20-odd characters ("NVIDIA RTX PRO 6000 Blac..."); when
`--query-gpu=compute_cap` is not there, the PCI device id (`nvidia-smi -q` "Device Id",
`lspci -n`) or an unambiguous name prefix still tells the cc. Every row comes from a real
capture that printed both the id or name and the cc.
"""

from __future__ import annotations

# PCI device id (lower-case hex, vendor 10de) -> (product, cc).
PCI_DEVICE_CC: dict[str, tuple[str, str]] = {
    # lspci "NVIDIA Corporation Device 2bb4" beside `--query-gpu=name,compute_cap` printing
    # "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition, 12.0" on the same host
    # (search index id 55414006193; tests/fixtures/public/lspci-rtxpro6000-maxq-2bb4.txt).
    "2bb4": ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "12.0"),
}

# Full product names -> cc, for matching a truncated name by prefix.
NAME_CC: dict[str, str] = {
    # same capture as above
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "12.0",
    # "DEVICE : NVIDIA RTX PRO 6000 Blackwell Server Edition / CC : sm_120" (index id 71436549283)
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "12.0",
}


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
    """A full or truncated ("...") name -> cc when every known name it could be agrees."""
    text = (name or "").strip()
    if not text:
        return None
    if text.endswith("..."):
        stem = text[:-3]
        if len(stem) < 20:  # nvidia-smi's table keeps 24 characters; shorter is not its cut
            return None
        ccs = {cc for full, cc in NAME_CC.items() if full.startswith(stem)}
    else:
        ccs = {NAME_CC[text]} if text in NAME_CC else set()
    return ccs.pop() if len(ccs) == 1 else None
