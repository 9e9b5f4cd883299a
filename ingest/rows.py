"""Check one event against the schema and convert it to column values.

Hand-written rather than pydantic: it runs once per event on the ingest hot path,
and its errors must name the file, line and field exactly as the user wrote them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import pyarrow as pa

from ..errors import BadInputError
from ..schema import BENCHMARK_NAME, COLUMNS, KIND_NAMES, SCHEMA_VERSION
from ..schema.events import TIMESTAMP
from .values import BadValue, aware, checker, parse_time

MAX_ID_CHARS = 512
ID_COLUMNS = ("event_id", "run_id", "task_id", "span_id", "parent_span_id", "trace_id")  # at most MAX_ID_CHARS
PAYLOAD_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


class Where:
    """Location of the record being converted, for error messages."""

    __slots__ = ("file", "line")

    def __init__(self, file: str, line: int | None):
        self.file, self.line = file, line

    def error(self, problem: str, field: str | None = None) -> BadInputError:
        return BadInputError(self.file, problem, line=self.line, field=field)


_STRING, _INTEGER, _NUMBER, _OBJECT = (checker(kind, article=True) for kind in ("string", "integer", "number", "object"))


def _integer(value: Any) -> int:
    if not -(2**63) <= _INTEGER(value) < 2**63:
        raise BadValue("integer out of the 64-bit range")
    return value


def _number(value: Any) -> float:
    return float(_NUMBER(value))


def _epoch_us(value: Any) -> int:
    """ISO-8601 text (no zone = UTC), epoch seconds, or a datetime -> epoch microseconds."""
    if isinstance(value, str):
        value = parse_time(value)
    if isinstance(value, datetime):
        return round(aware(value).timestamp() * 1_000_000)
    seconds = _number(value)
    if not 0 <= seconds < 32503680000:  # year 3000
        raise BadValue(f"epoch seconds out of range: {seconds}")
    return round(seconds * 1_000_000)


def _payload(value: Any) -> str:
    # Serialised here, with sorted keys, so equal payloads are equal text (export round-trips).
    try:
        return orjson.dumps(_OBJECT(value), option=PAYLOAD_OPTIONS).decode()
    except TypeError as e:
        raise BadValue(f"cannot be stored as JSON: {e}") from None


def _converter(column_type: pa.DataType, name: str):
    if name == "payload":
        return _payload
    if column_type == TIMESTAMP:
        return _epoch_us
    if pa.types.is_integer(column_type):
        return _integer
    if pa.types.is_floating(column_type):
        return _number
    return _STRING


CONVERTERS = {c.name: _converter(c.type, c.name) for c in COLUMNS}
REQUIRED = tuple(c.name for c in COLUMNS if c.required)


def convert(event: dict[str, Any], where: Where) -> dict[str, Any]:
    """Typed, validated column values of one event (keys: every column)."""
    row: dict[str, Any] = dict.fromkeys(CONVERTERS)
    for name, value in event.items():
        convert_value = CONVERTERS.get(name)
        if convert_value is None:
            raise where.error("unknown field; put extra data in 'payload'", name)
        if value is not None:
            try:
                row[name] = convert_value(value)
            except BadValue as e:
                raise where.error(str(e), name) from None
    if row["schema_version"] is None:
        row["schema_version"] = SCHEMA_VERSION
    _check_envelope(row, where)
    return row


def _check_envelope(row: dict[str, Any], where: Where) -> None:
    for name in REQUIRED:
        if row[name] is None or row[name] == "":
            raise where.error("required field is missing", name)
    if row["kind"] not in KIND_NAMES:
        raise where.error(f"unknown kind {row['kind']!r}; known kinds: {', '.join(sorted(KIND_NAMES))}", "kind")
    if not BENCHMARK_NAME.match(row["benchmark"]):
        raise where.error(f"{row['benchmark']!r} is not a benchmark name (lowercase letters, digits, '_' and '-')", "benchmark")
    if row["schema_version"] > SCHEMA_VERSION:
        raise where.error(f"written by a newer tracewh (schema {row['schema_version']} > {SCHEMA_VERSION}); upgrade tracewh", "schema_version")
    for name in ID_COLUMNS:
        if row[name] is not None and len(row[name]) > MAX_ID_CHARS:
            raise where.error(f"longer than {MAX_ID_CHARS} characters", name)
