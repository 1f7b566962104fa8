"""venv: `uv venv` at a path, with the Python asked for."""

from gpudash.tasks.kinds.base import VENV, Kind, Param, sh

KIND = Kind(
    "venv",
    {"path": VENV, "python": Param("python", "3.12", doc="Python version; '' = uv's")},
    sh("venv.sh"),
    'test -x "$GPUDASH_PATH/bin/python"',
    affects=("env",),
    default_timeout=900,
)
