if ! command -v git >/dev/null 2>&1; then
    echo "gpudash: git not found (git apply does the patching)"
    exit 127
fi
SP=$("$GPUDASH_VENV/bin/python" -c '
import importlib, os, sys
module = importlib.import_module(sys.argv[1])
print(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
' "$GPUDASH_MODULE") || {
    echo "gpudash: cannot import $GPUDASH_MODULE with $GPUDASH_VENV/bin/python"
    exit 1
}
cd "$SP" || exit
echo "patching in $SP"
# git looks no further up than here: site-packages inside some repo must not change paths.
GIT_CEILING_DIRECTORIES=$(dirname "$SP")
export GIT_CEILING_DIRECTORIES
rc=0
for p in "$GPUDASH_JOB"/files/*.patch; do
    [ -e "$p" ] || { echo "gpudash: no patch files"; exit 1; }
    n=${p##*/}
    if git apply --reverse --check "$p" >/dev/null 2>&1; then
        echo "$n: already applied, skipped"
    elif git apply --check "$p"; then
        if git apply "$p"; then echo "$n: applied"; else echo "$n: failed"; rc=1; fi
    else
        echo "$n: does not apply"
        rc=1
    fi
done
exit $rc
