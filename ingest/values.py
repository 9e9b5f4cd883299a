"""The value checks every reader shares: ISO-8601 times and JSON value types.

One copy for the whole ingest path (event columns in rows.py, raw source fields in
fields.py, the adapters), so a time or a type is accepted or refused the same way
whichever format it came in. A refused value raises BadValue, whose text the caller puts
in a BadInputError naming its own file, line and field.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

# kind -> the Python types JSON decoding gives it
KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "list": (list,), "object": (dict,),
}
_WITH_ARTICLE = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean",
                 "list": "a list", "object": "a JSON object"}


class BadValue(ValueError):
    """A refused value; str() says what is wrong, worded to follow the field's name in an error."""


def parse_time(text: str) -> datetime:
    """An ISO-8601 time ("Z" or an offset; no zone = UTC) as an aware datetime."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))  # Python 3.10 does not read "Z"
    except ValueError:
        raise BadValue(f"expected an ISO-8601 time, got {text[:60]!r}") from None
    return aware(when)


def aware(when: datetime) -> datetime:
    """A datetime with a zone: a zone-less one is read as UTC, as every harness we read writes it."""
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def describe(value: Any) -> str:
    """A short, safe rendering of a bad value for an error message (values may be huge or deeply nested)."""
    return f"{type(value).__name__} {reprlib.repr(value)}"


def checker(kind: str, *, article: bool = False) -> Callable[[Any], Any]:
    """The check for one kind: value -> the value when it is of `kind` (a number also finite),
    else BadValue. Built once per kind, as it runs for every field on the ingest hot path.

    Two wordings, kept as users have seen them: raw source fields say "expected number,
    got ..."; event columns (`article`) say "expected a number, got ..."."""
    types, finite = KINDS[kind], kind == "number"
    no_bool = kind in ("integer", "number")  # True is an int to Python, not a number to JSON
    expected = _WITH_ARTICLE[kind] if article else kind

    def check(value: Any) -> Any:
        if not isinstance(value, types) or (no_bool and value.__class__ is bool):
            raise BadValue(f"expected {expected}, got {describe(value)}")
        if finite and not math.isfinite(value):
            raise BadValue(f"expected a finite number, got {value}")
        return value

    return check
