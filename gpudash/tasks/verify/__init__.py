"""The verify task: a program shipped to the host that runs real kernels on its GPUs.

`program.py` is standalone (stdlib + torch, torch imported inside functions) because it is
copied to the host and run there with the serving venv's python; nothing in it may import
gpudash. Its JSON result is read back by `gpudash.probe.verify` and judged by
`gpudash.checks.verify`.
"""

from __future__ import annotations

from pathlib import Path

PROGRAM = Path(__file__).with_name("program.py")
"""The file the task copies to the host."""

RESULT_DIR = ".cache/gpudash/verify"
"""Under the login's $HOME: `last.json` there is what the probe's verify section reads."""

# The task's shell body. The program arrives as the job's file `program.py`; its result goes
# to the job dir and is then copied (tmp + mv, so a reader never sees half a file) to the
# fixed path the probe reads. Without a python in the venv there is nothing to run: the old
# result is removed rather than left to speak for a venv that is gone.
BODY = r"""
PY="$GPUDASH_VENV/bin/python"
D="$HOME/.cache/gpudash/verify"
if [ ! -x "$PY" ]; then
    echo "verify: FAIL: no python at $PY (run the venv and torch tasks first)"
    rm -f "$D/last.json"
    exit 1
fi
set -- "$PY" "$GPUDASH_JOB/files/program.py" --out "$GPUDASH_JOB/result.json"
if [ -n "${GPUDASH_EXPECT_GPUS:-}" ]; then set -- "$@" --expect-gpus "$GPUDASH_EXPECT_GPUS"; fi
if [ "${GPUDASH_FORCE:-0}" = 1 ]; then set -- "$@" --force; fi
rm -f "$GPUDASH_JOB/result.json"
"$@"
rc=$?
if [ -f "$GPUDASH_JOB/result.json" ]; then
    mkdir -p "$D" && cp "$GPUDASH_JOB/result.json" "$D/last.json.tmp" &&
        mv -f "$D/last.json.tmp" "$D/last.json" && echo "verify: result kept at $D/last.json"
fi
exit $rc
"""
