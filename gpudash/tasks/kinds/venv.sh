command -v uv >/dev/null 2>&1 || { echo "gpudash: uv not found (run the uv task first)"; exit 127; }
set -- uv venv --allow-existing
if [ -n "$GPUDASH_PYTHON" ]; then set -- "$@" --python "$GPUDASH_PYTHON"; fi
"$@" "$GPUDASH_PATH" || exit
"$GPUDASH_PATH/bin/python" --version
