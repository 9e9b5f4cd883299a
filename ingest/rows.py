"""Check one event against the schema and convert it to column values.

Hand-written rather than pydantic: it runs once per event on the ingest hot path,
and its errors must name the file, line and field exactly as the user wrote them.
"""

from __future__ import annotations

import math
import re
import reprlib
from datetime import datetime, timezone
from typing import Any

import orjson
import pyarrow as pa

from ..errors import BadInputError
from ..schema import COLUMNS, KIND_NAMES, SCHEMA_VERSION
from ..schema.events import TIMESTAMP

BENCHMARK_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_ID_CHARS = 512


class Where:
    """Location of the record being converted, for error messages."""

    __slots__ = ("file", "line")

    def __init__(self, file: str, line: int | None):
        self.file, self.line = file, line

    def error(self, problem: str, field: str | None = None) -> BadInputError:
        return BadInputError(self.file, problem, line=self.line, field=field)


def _describe(value: Any) -> str:
    """A short, safe rendering of a bad value for an error message (values may be huge or deeply nested)."""
    return f"{type(value).__name__} {reprlib.repr(value)}"


def _string(value: Any, name: str, where: Where) -> str:
    if not isinstance(value, str):
        raise where.error(f"expected a string, got {_describe(value)}", name)
    return value


def _integer(value: Any, name: str, where: Where) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.error(f"expected an integer, got {_describe(value)}", name)
    if not -(2**63) <= value < 2**63:
        raise where.error("integer out of the 64-bit range", name)
    return value


def _number(value: Any, name: str, where: Where) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.error(f"expected a number, got {_describe(value)}", name)
    if not math.isfinite(value):
        raise where.error(f"expected a finite number, got {value}", name)
    return float(value)


def _epoch_us(value: Any, name: str, where: Where) -> int:
    """ISO-8601 text (no zone = UTC), epoch seconds, or a datetime -> epoch microseconds."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise where.error(f"expected an ISO-8601 time, got {value[:60]!r}", name) from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return round(value.timestamp() * 1_000_000)
    seconds = _number(value, name, where)
    if not 0 <= seconds < 32503680000:  # year 3000
        raise where.error(f"epoch seconds out of range: {seconds}", name)
    return round(seconds * 1_000_000)


def _payload(value: Any, name: str, where: Where) -> str:
    # Serialised here, with sorted keys, so equal payloads are equal text (export round-trips).
    if not isinstance(value, dict):
        raise where.error(f"expected a JSON object, got {_describe(value)}", name)
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError as e:
        raise where.error(f"cannot be stored as JSON: {e}", name) from None


def _converter(column_type: pa.DataType, name: str):
    if name == "payload":
        return _payload
    if column_type == TIMESTAMP:
        return _epoch_us
    if pa.types.is_integer(column_type):
        return _integer
    if pa.types.is_floating(column_type):
        return _number
    return _string


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
            row[name] = convert_value(value, name, where)
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
    for name in ("event_id", "run_id", "task_id", "span_id", "parent_span_id", "trace_id"):
        if row[name] is not None and len(row[name]) > MAX_ID_CHARS:
            raise where.error(f"longer than {MAX_ID_CHARS} characters", name)


class ColumnBuffer:
    """Rows accumulated column by column, handed out as Arrow record batches."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.columns: dict[str, list[Any]] = {name: [] for name in schema.names}
        self.rows = 0

    def append(self, row: dict[str, Any]) -> None:
        for name, values in self.columns.items():
            values.append(row[name])
        self.rows += 1

    def take(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_pydict(self.columns, schema=self.schema)
        self.columns = {name: [] for name in self.schema.names}
        self.rows = 0
        return batch
