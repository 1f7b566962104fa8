[ -x "$GPUDASH_VENV/bin/python" ] || exit 1
"$GPUDASH_VENV/bin/python" -c '
import importlib, os
importlib.import_module(os.environ["GPUDASH_ENGINE"])
'
