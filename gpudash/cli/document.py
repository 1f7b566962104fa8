"""The envelope every JSON document gpudash prints carries (probe, check, report, parse).

A script that stores or compares these documents needs to know which shape it holds and
where it came from: `schema` is an integer bumped on any incompatible change to a document's
keys (a key added is compatible, a key renamed or removed is not), `gpudash_version` is the
package version that wrote it and `generated_at` the UTC time it was written (RFC 3339,
seconds). The three keys come first so `head` of a long document shows them.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from gpudash import __version__

SCHEMA = 1
"""The version of every document's shape; see the module docstring for when it changes."""


def envelope(body: Mapping[str, Any], *, now: datetime.datetime | None = None) -> dict[str, Any]:
    """`body` with `schema`, `gpudash_version` and `generated_at` in front of its keys."""
    when = (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(datetime.timezone.utc)
    head = {
        "schema": SCHEMA,
        "gpudash_version": __version__,
        "generated_at": when.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    }
    return {**head, **body}
