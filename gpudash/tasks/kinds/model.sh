if ! command -v hf >/dev/null 2>&1; then
    echo "gpudash: hf not found (pip install huggingface_hub)"
    exit 127
fi
DEST="$GPUDASH_DIR/$GPUDASH_REPO"
mkdir -p "$DEST" || exit
HFPY=$(sed -n '1s/^#!//p' "$(command -v hf)")
[ -n "$HFPY" ] || HFPY=python3
need=$("$HFPY" -c '
import os
from huggingface_hub import HfApi
info = HfApi().model_info(
    os.environ["GPUDASH_REPO"], revision=os.environ.get("GPUDASH_REVISION") or None,
    files_metadata=True,
)
print(sum(s.size or 0 for s in info.siblings or ()))
') || { echo "gpudash: could not read the size of $GPUDASH_REPO from the Hub"; exit 1; }
# Sizes in KiB as the tools print them, multiplied by the shell: awk's arithmetic prints
# numbers past 2^31 as 8.5e+10 (mawk, Debian's awk), which `[ -gt ]` cannot compare.
have_k=$(du -sk "$DEST" 2>/dev/null | awk '{print $1}')
free_k=$(df -Pk "$DEST" | awk 'NR == 2 {print $4}')
case "${have_k:-0}${free_k:-x}" in
    *[!0-9]*) echo "gpudash: cannot read the free space of $DEST (df printed: $free_k)"; exit 1 ;;
esac
have=$(( ${have_k:-0} * 1024 ))
free=$(( free_k * 1024 ))
echo "repo size $need bytes, already here $have, free $free"
if [ $((need - have)) -gt "$free" ]; then
    gib=1073741824
    echo "gpudash: not enough space in $GPUDASH_DIR:" \
        "need $((need / gib)) GiB, free $((free / gib)) GiB"
    exit 1
fi
set -- hf download "$GPUDASH_REPO" --local-dir "$DEST"
if [ -n "$GPUDASH_REVISION" ]; then set -- "$@" --revision "$GPUDASH_REVISION"; fi
set -f
old_ifs=$IFS
IFS='
'
for pattern in $GPUDASH_INCLUDE; do set -- "$@" --include "$pattern"; done
IFS=$old_ifs
set +f
echo "+ $*"
"$@"
