from gpudash.cli import startup

startup.pause()  # until the command's start is over (gpudash/cli/startup.py)

from gpudash.cli.main import entry  # noqa: E402

entry()
