"""Probes: the script a host runs, its sections, and the parsers of what they print."""

# The tool outputs `gpudash parse KIND` reads (gpudash.probe.tools), named here so that the
# command line can offer them without importing every parser.
TOOL_KINDS = ("topo", "smi", "query", "nvlink", "nvcc", "p2p")
