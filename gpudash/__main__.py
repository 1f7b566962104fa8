from gpudash.cli import entry

entry()
