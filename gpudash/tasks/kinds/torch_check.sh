[ -x "$GPUDASH_VENV/bin/python" ] || exit 1
"$GPUDASH_VENV/bin/python" -c '
import os, sys
import torch
want = os.environ["GPUDASH_CUDA"]
have = torch.version.cuda
tag = "cpu" if have is None else "cu" + have.replace(".", "")
release = os.environ.get("GPUDASH_TORCH", "").rstrip("*").rstrip(".")
same = not release or (torch.__version__.split("+")[0] + ".").startswith(release + ".")
sys.exit(0 if tag == want and same else 1)
'
