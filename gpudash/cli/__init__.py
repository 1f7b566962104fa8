"""The headless face: one parser and dispatch (main), one module per command."""
