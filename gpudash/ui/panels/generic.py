"""A readable fallback for any section dataclass: one `field: value` line each.

Used for sections whose panel has no renderer of its own yet, so new core sections show up
at once, literally and safely.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from gpudash.model import to_jsonable
from gpudash.ui.render import remote


def generic(data: Any) -> Text:
    value = to_jsonable(data)
    out = Text()
    _emit(out, value, 0)
    out.rstrip()
    return out


def _emit(out: Text, value: Any, indent: int) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if item in (None, "", [], {}, ()):
                continue
            out.append(f"{pad}{key}", style="bold")
            if isinstance(item, (dict, list)):
                out.append("\n")
                _emit(out, item, indent + 1)
            else:
                out.append(": ")
                out.append(remote(item))
                out.append("\n")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _emit(out, item, indent)
                out.append(f"{pad}\n")
            else:
                out.append(f"{pad}- ")
                out.append(remote(item))
                out.append("\n")
    else:
        out.append(pad)
        out.append(remote(value))
        out.append("\n")
