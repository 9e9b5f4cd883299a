"""OTLP attribute values as JSON values, and the coercions the typed columns need.

Any AnyValue may arrive (docs/formats/otel.md §1, §7 "Structured attribute values"): strings,
booleans, int64, doubles, arrays, key-value lists, bytes and empty values. Every one becomes
plain JSON, so no attribute is ever dropped; bytes become base64 text.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import orjson


def json_value(value: Any) -> Any:
    """One AnyValue (opentelemetry.proto.common.v1.AnyValue) as JSON; the common cases first (hot path)."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "kvlist_value":
        return attribute_map(value.kvlist_value.values)
    if which == "array_value":
        return [json_value(v) for v in value.array_value.values]
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)  # JSON has no NaN or infinity
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None  # an empty value, or a profiles-only string table index


def attribute_map(key_values: Any) -> dict[str, Any]:
    """Repeated KeyValue as a dict (keys are unique per the spec; a repeat keeps the last)."""
    return {kv.key: json_value(kv.value) for kv in key_values}


def integer(value: Any) -> int | None:
    """A token count or sequence number as an int: ints, integral doubles and digit strings
    (sloppy senders write all three); anything else is left to the payload."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def text(value: Any) -> str | None:
    """A string attribute; other scalars as their text; lists and maps are not names."""
    if value is None or isinstance(value, (list, dict)):
        return None
    return value if isinstance(value, str) else str(value)


def structured(value: Any) -> Any:
    """A value the conventions say is "expected to be an object" but may be JSON text
    (tool arguments and results, OpenInference input.value): parsed when it is JSON."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value
