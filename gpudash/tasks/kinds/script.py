"""script: the user's own shell text (`run = ...` in the config), run as a job like any other."""

from gpudash.tasks.facts import Facts
from gpudash.tasks.kinds.base import Draft, Kind


def _prepare(draft: Draft, facts: Facts) -> None:
    draft.body = draft.spec.run or ""


KIND = Kind("script", {}, "", None, default_timeout=3600, prepare=_prepare)
