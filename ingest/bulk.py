"""Convert many events at once into an Arrow record batch: the columns rows.convert() gives.

The per-event path (rows.convert) checks and converts a field at a time in Python, which
made it most of an ingest's cost. Here each column is checked and converted whole, with
pyarrow's type inference (each Python type maps to one Arrow type, so an int that should be
a string, or a bool that should be a number, shows as the column's type) and vectorised
checks. Whenever convert() could refuse an event, or store it differently, this raises
Irregular and does not decide: the caller converts that chunk one event at a time, so
errors still name file, line and field exactly as before, and stored values cannot differ
(tests/test_bulk.py compares the two paths event by event).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ..schema import ARROW_SCHEMA, BENCHMARK_NAME, COLUMNS, KIND_NAMES, SCHEMA_VERSION
from ..schema.events import TIMESTAMP
from .rows import CONVERTERS, ID_COLUMNS, MAX_ID_CHARS, REQUIRED, PAYLOAD_OPTIONS
from .values import BadValue

# Times given as ISO-8601 text that pyarrow parses to the same instant as Python's
# datetime.fromisoformat (3.10 and later): seconds, 3 or 6 fraction digits, a zone. Other
# spellings (no zone, a space, other fractions) are parsed one by one, as convert() does.
ISO_UTC = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
           r"(\.[0-9]{3}|\.[0-9]{6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")
MAX_EXACT_US = 2**53  # below it, numpy's float arithmetic on microseconds is Python's, bit for bit
EPOCH_SECONDS_LIMIT = 32503680000  # year 3000, as rows._epoch_us
_NONE = type(None)


class Irregular(Exception):
    """This chunk needs the per-event path: something in it is refused, or unusual."""


def convert_batch(events: list[dict[str, Any]]) -> pa.RecordBatch:
    """Typed, validated columns of `events`, as rows.convert() gives them one by one."""
    present = set().union(*events)
    if not present <= CONVERTERS.keys():
        raise Irregular("unknown field")
    n = len(events)
    names = [c.name for c in COLUMNS if c.name in present]
    # Row by row, then transposed: each event dict is visited once (a pass per column over
    # tens of thousands of dicts misses the CPU caches, 35% slower).
    values = dict(zip(names, zip(*[[e.get(name) for name in names] for e in events])))
    arrays = {c.name: convert_column(c.name, values[c.name]) if c.name in present else pa.nulls(n, c.type)
              for c in COLUMNS}
    arrays["schema_version"] = pc.fill_null(arrays["schema_version"], pa.scalar(SCHEMA_VERSION, pa.int32()))
    check_envelope(arrays)
    return pa.RecordBatch.from_arrays(list(arrays.values()), schema=ARROW_SCHEMA)


# ------------------------------------------------------------------------- columns
def _inferred(values: Sequence[Any], *allowed: pa.DataType) -> pa.Array:
    """The values as Arrow infers them, when that is one of `allowed` (or all null)."""
    try:
        array = pa.array(values)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        raise Irregular("mixed or out-of-range values") from None
    if array.type != pa.null() and array.type not in allowed:
        raise Irregular(f"values of type {array.type}")
    return array


def _strings(values: Sequence[Any]) -> pa.Array:
    return _inferred(values, pa.string()).cast(pa.string())


def _integers(values: Sequence[Any]) -> pa.Array:
    return _inferred(values, pa.int64()).cast(pa.int64())


def _small_integers(values: Sequence[Any]) -> pa.Array:
    return as_int32(_integers(values))


def as_int32(array: pa.Array) -> pa.Array:
    low, high = pc.min_max(array).values()
    if low.is_valid and not (-2**31 <= low.as_py() and high.as_py() < 2**31):
        raise Irregular("out of the int32 range")
    return array.cast(pa.int32())


def _numbers(values: Sequence[Any]) -> pa.Array:
    array = _inferred(values, pa.int64(), pa.float64()).cast(pa.float64(), safe=False)  # as float(int): nearest
    if array.null_count < len(array) and not pc.all(pc.is_finite(array)).as_py():
        raise Irregular("not finite")
    return array


def _payloads(values: Sequence[Any]) -> pa.Array:
    # Serialised as rows._payload does (sorted keys: equal payloads are equal text).
    if not set(map(type, values)) <= {dict, _NONE}:
        raise Irregular("payload not an object")
    try:
        texts = [None if v is None else orjson.dumps(v, option=PAYLOAD_OPTIONS) for v in values]
    except TypeError:
        raise Irregular("payload not serialisable") from None
    return pa.array(texts, pa.binary()).cast(pa.string())


def _times(values: Sequence[Any]) -> pa.Array:
    """Epoch microseconds of ISO-8601 text, epoch seconds or datetimes, as rows._epoch_us rounds them."""
    classes = set(map(type, values)) - {_NONE}
    if not classes:
        return pa.nulls(len(values), TIMESTAMP)
    if not classes <= {str, int, float, datetime}:
        raise Irregular("time of another type")
    parts = []
    if str in classes:
        parts.append(_iso_times([v if v.__class__ is str else None for v in values]))
    if classes & {int, float}:
        parts.append(_epoch_times([v if v.__class__ in (int, float) else None for v in values]))
    if datetime in classes:
        parts.append(_one_by_one([v if v.__class__ is datetime else None for v in values]))
    micros = pc.coalesce(*parts) if len(parts) > 1 else parts[0]
    return micros.cast(pa.int64()).cast(TIMESTAMP)


def _iso_times(texts: list[str | None]) -> pa.Array:
    return iso_micros(pa.array(texts, pa.string()))


def _epoch_times(numbers: list[Any]) -> pa.Array:
    return epoch_micros(_numbers(numbers))


def iso_micros(texts: pa.Array) -> pa.Array:
    """Epoch microseconds of ISO-8601 texts, as rows._epoch_us gives them (Irregular: it refuses one)."""
    regular = pc.match_substring_regex(texts, ISO_UTC)
    if not pc.all(pc.or_kleene(regular, pc.is_null(texts))).as_py():
        return _one_by_one(texts.to_pylist())
    try:
        micros = texts.cast(TIMESTAMP).cast(pa.int64())
    except pa.ArrowInvalid:  # a day the month does not have: Python's words for it, one by one
        return _one_by_one(texts.to_pylist())
    return _as_python_rounds(micros)


def epoch_micros(seconds: pa.Array) -> pa.Array:
    """Epoch microseconds of epoch seconds (float64), as rows._epoch_us rounds them."""
    inside = pc.and_(pc.greater_equal(seconds, 0), pc.less(seconds, EPOCH_SECONDS_LIMIT))
    if not pc.all(pc.or_kleene(inside, pc.is_null(seconds))).as_py():
        raise Irregular("epoch seconds out of range")
    values = seconds.to_numpy(zero_copy_only=False)
    return pa.array(np.round(values * 1e6), mask=np.isnan(values)).cast(pa.int64())


def _as_python_rounds(micros: pa.Array) -> pa.Array:
    """round(datetime.timestamp() * 1e6), as rows._epoch_us computes it: the same float steps."""
    us = micros.to_numpy(zero_copy_only=False)
    valid = ~np.isnan(us) if us.dtype.kind == "f" else np.ones(len(us), bool)
    if np.any(np.abs(us[valid]) >= MAX_EXACT_US):
        raise Irregular("time too far from 1970 for exact float steps")
    seconds = us / 1e6
    return pa.array(np.round(seconds * 1e6), mask=~valid).cast(pa.int64())


def _one_by_one(values: Sequence[Any]) -> pa.Array:
    try:
        return pa.array([None if v is None else CONVERTERS["ts"](v) for v in values], pa.int64())
    except BadValue:
        raise Irregular("a time convert() refuses") from None


def _column_converter(column_type: pa.DataType, name: str) -> Callable[[Sequence[Any]], pa.Array]:
    if name == "payload":
        return _payloads
    if column_type == TIMESTAMP:
        return _times
    if column_type == pa.int32():
        return _small_integers
    if pa.types.is_integer(column_type):
        return _integers
    if pa.types.is_floating(column_type):
        return _numbers
    return _strings


_COLUMN = {c.name: _column_converter(c.type, c.name) for c in COLUMNS}


def convert_column(name: str, values: Sequence[Any]) -> pa.Array:
    """One event column's values (payloads as dicts, times as given), typed and checked as
    convert_batch() types and checks them; Irregular when convert() could refuse one."""
    return _COLUMN[name](values)


# ------------------------------------------------------------------------- envelope
def check_envelope(arrays: dict[str, pa.Array]) -> None:
    """rows._check_envelope, for whole columns."""
    for name in REQUIRED:
        column = arrays[name]
        if column.null_count or (pa.types.is_string(column.type) and pc.any(pc.equal(column, "")).as_py()):
            raise Irregular(f"{name} missing")
    if not pc.all(pc.is_in(arrays["kind"], pa.array(sorted(KIND_NAMES)))).as_py():
        raise Irregular("unknown kind")
    if not all(BENCHMARK_NAME.match(b) for b in pc.unique(arrays["benchmark"]).to_pylist()):
        raise Irregular("benchmark name")
    if pc.max(arrays["schema_version"]).as_py() > SCHEMA_VERSION:
        raise Irregular("newer schema")
    for name in ID_COLUMNS:
        lengths = pc.utf8_length(arrays[name])
        if lengths.null_count < len(lengths) and pc.max(lengths).as_py() > MAX_ID_CHARS:
            raise Irregular(f"{name} too long")
