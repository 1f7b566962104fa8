from gpudash.cli.main import entry

entry()
