# Packages go through a requirements file: one spec a line, no word splitting anywhere.
command -v uv >/dev/null 2>&1 || { echo "gpudash: uv not found (run the uv task first)"; exit 127; }
[ -x "$GPUDASH_VENV/bin/python" ] || { echo "gpudash: no venv at $GPUDASH_VENV"; exit 1; }
printf '%s\n' "$GPUDASH_PACKAGES" > "$GPUDASH_JOB/requirements.txt" || exit
set -- uv pip install --python "$GPUDASH_VENV/bin/python" -r "$GPUDASH_JOB/requirements.txt"
if [ -n "${GPUDASH_INDEX_URL:-}" ]; then set -- "$@" --index-url "$GPUDASH_INDEX_URL"; fi
if [ -n "${GPUDASH_FIND_LINKS:-}" ]; then set -- "$@" --find-links "$GPUDASH_FIND_LINKS"; fi
if [ "${GPUDASH_NO_INDEX:-0}" = 1 ]; then set -- "$@" --no-index; fi
if [ -n "${GPUDASH_TORCH_BACKEND:-}" ]; then
    set -- "$@" --torch-backend "$GPUDASH_TORCH_BACKEND"
fi
echo "+ $*"
"$@"
