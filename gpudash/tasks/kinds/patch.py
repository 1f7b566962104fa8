"""patch: local .patch files applied with `git apply` inside the venv's site-packages."""

from __future__ import annotations

import os
import re

from gpudash.tasks.facts import Facts, PrepareError
from gpudash.tasks.kinds.base import VENV, Draft, Kind, Param, sh


def _prepare(draft: Draft, facts: Facts) -> None:
    """The patches travel as the job's files, renamed to safe, ordered names."""
    patches = draft.params.pop("patches")
    for index, path in enumerate(patches if isinstance(patches, (list, tuple)) else ()):
        base = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path)).lstrip("._-") or "p"
        if not base.endswith(".patch"):
            base += ".patch"
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                draft.files[f"{index:02d}-{base}"] = f.read()
        except OSError as exc:
            raise PrepareError(f"{draft.spec.name}: cannot read {path}: {exc.strerror}") from None


KIND = Kind(
    "patch",
    {
        "venv": VENV,
        "module": Param("module", required=True, doc="import name of the patched package"),
        "patches": Param("local_files", required=True, doc=".patch files on this machine"),
    },
    sh("patch.sh"),
    None,
    affects=("env",),
    default_timeout=300,
    prepare=_prepare,
)
