"""One module per panel of the host view; each renders one section of a `HostResult`."""
