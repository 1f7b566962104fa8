"""Facts tables with their sources: every row traces to a document (URL + version)."""
