# Every distribution name importable-by-metadata in the venv: "installed, any version".
[ -x "$GPUDASH_VENV/bin/python" ] || exit 1
"$GPUDASH_VENV/bin/python" -c '
import importlib.metadata as m, os, sys
for name in os.environ["GPUDASH_PACKAGE_NAMES"].split():
    try:
        m.version(name)
    except m.PackageNotFoundError:
        sys.exit(1)
'
