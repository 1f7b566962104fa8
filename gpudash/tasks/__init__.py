"""Bootstrap tasks: specs (TOML), rendering, the detached job protocol, the runner."""
