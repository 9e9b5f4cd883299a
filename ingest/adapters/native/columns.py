"""Native event lines read a block at a time as Arrow columns (EventBatch, adapters/base.py).

The per-line reader (records.py, events.py) turns every line into a dict that the pipeline
then converts field by field, which was most of a native ingest's time. Here DuckDB's JSON
functions read a block of lines (about 8 MB) in one query: each field's JSON type is checked
for the whole block and its values cast in bulk. Payloads alone go through Python (orjson),
to be written again with sorted keys exactly as convert() writes them.

A block holding anything these checks do not clear (a value of another type, a field unknown,
repeated, or null where a default would apply, a line over the limit, a blank line, a last
line without its newline, bytes that are not UTF-8) is read by the per-line reader instead,
whose errors name file, line and field. DuckDB's JSON parser accepts what orjson refuses. Its
NaN, Infinity, nan and inf keep their text in what it hands over, which the value checks then
refuse (a number must be written as JSON writes one, a payload is parsed again by orjson).
Trailing commas leave no trace: a block with a line that may hold one is read per line too
(also when the text is inside a string: slower, never different). Files of fewer than
BULK_MIN_BYTES (__init__.py) are read per line, without this module: a DuckDB connection costs
more than reading them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import duckdb
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import BadInputError
from ....schema import COLUMNS, NATIVE_FORMAT
from ....schema.events import TIMESTAMP
from ....warehouse.batchdb import MEMORY_LIMIT
from ...bulk import Irregular, as_int32, epoch_micros, iso_micros
from ...context import AdapterContext
from ...jsonlines import parse_record, torn_tail_skipped
from ...rows import PAYLOAD_OPTIONS
from ...sources import SourceFile
from ..base import EventBatch
from . import events as per_line

BLOCK_BYTES = 8 << 20
NO_NULL = ("event_id", "batch_id", "source", "seq")  # null in a record is not "left out": convert() refuses it
LAX = r",[ \t\r\n]*[\]}]"  # a trailing comma: DuckDB's JSON parser drops it, orjson refuses it
WHITESPACE = np.frombuffer(b" \t\n\r\x0b\x0c", np.uint8)  # bytes.strip()'s
AFTER_COMMA_LAX = np.isin(np.arange(256), list(b" \t\r\n]}"))  # by byte: may it follow a comma in LAX's match?
SCAN_PIECES = 8


def read(file: SourceFile, ctx: AdapterContext) -> Iterator[EventBatch | tuple[int, dict[str, Any]]]:
    """The file's events: blocks of regular lines as EventBatch, other lines as (line, event).
    A range of a larger file (ranges.py) starts at its `first_line`, after the header."""
    whole = file.first_line == 1
    with file.open() as stream:
        progress = _Progress(file, ctx)
        if whole:
            header = stream.readline(ctx.limits.max_line_bytes + 1)
            if not _is_header(header):  # the per-line reader words what is wrong with it
                yield from per_line.events(file, ctx)
                return
            progress.consumed(len(header))
        con, line = _connection(ctx.threads), 2 if whole else file.first_line
        try:
            for block in _blocks(stream, ctx.limits.max_line_bytes):
                yield from _block_events(con, block, line, file, ctx)
                line += block.count(b"\n")
                progress.consumed(len(block))
        finally:
            con.close()
        progress.done()


_databases: dict[int, duckdb.DuckDBPyConnection] = {}
_databases_made = threading.Lock()


def _connection(threads: int | None) -> duckdb.DuckDBPyConnection:
    """A connection for one read (a DuckDB connection serves one thread at a time) to this
    process's database for reading blocks. The database is kept: a new one and its first JSON
    query cost 30 ms, paid 32 times a GB of a file cut into ranges (ranges.py) otherwise; a
    connection to it costs 2. By process id: a staging worker, a fork, must not use the database
    it inherits (its threads did not come along), nor close it: it stays unused until the worker
    ends (os._exit, which runs no destructor). `threads`: the database's, when it is made."""
    with _databases_made:
        database = _databases.get(os.getpid())
        if database is None:
            config = {"memory_limit": MEMORY_LIMIT} | ({"threads": threads} if threads else {})
            database = _databases[os.getpid()] = duckdb.connect(config=config)
    return database.cursor()


def _is_header(line: bytes) -> bool:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return line.endswith(b"\n") and isinstance(record, dict) and record.get("format") == NATIVE_FORMAT


def _blocks(stream: Any, max_line_bytes: int) -> Iterator[bytes]:
    """The rest of the stream in blocks of whole lines; only the last may end without a newline.
    A line longer than the limit ends its block, cut at limit + 1 bytes (the per-line reader
    then refuses it, after the lines before it)."""
    rest = b""
    while chunk := stream.read(BLOCK_BYTES):
        data = rest + chunk
        end = data.rfind(b"\n") + 1
        if end == 0 and len(data) > max_line_bytes:
            yield data[: max_line_bytes + 1]
            return
        if end:
            yield data[:end]
        rest = data[end:]
    if rest:
        yield rest


class _Progress:
    """Stored bytes consumed, reported as the per-line reader reports them (scaled for compression)."""

    def __init__(self, file: SourceFile, ctx: AdapterContext):
        self.file, self.report, self.reported = file, ctx.progress, 0
        self.scale = file.stored_bytes / file.plain_bytes if file.plain_bytes else 1.0

    def consumed(self, plain: int) -> None:
        step = min(int(plain * self.scale), self.file.stored_bytes - self.reported)
        self.reported += step
        self.report(step)

    def done(self) -> None:
        self.report(self.file.stored_bytes - self.reported)


# ------------------------------------------------------------------------- one block
def _block_events(con: duckdb.DuckDBPyConnection, block: bytes, first: int, file: SourceFile,
                  ctx: AdapterContext) -> Iterator[EventBatch | tuple[int, dict[str, Any]]]:
    try:
        columns = _columns(con, block, first, ctx.limits.max_line_bytes)
    except Irregular:
        yield from _per_line(block, first, file, ctx)
        return
    yield EventBatch(file, columns, lambda: ((file, line, event) for line, event in _per_line(block, first, file, ctx)))


def _columns(con: duckdb.DuckDBPyConnection, block: bytes, first: int, max_line_bytes: int) -> pa.RecordBatch:
    lines = _lines(block, max_line_bytes)
    numbers = pa.array(np.arange(first, first + len(lines), dtype=np.int64))
    # In pieces, so DuckDB reads them on every core (one Arrow batch is one thread's work).
    pieces = pa.table({"line_no": numbers, "line": lines}).to_batches(max_chunksize=-(-len(lines) // SCAN_PIECES))
    con.register("block", pa.Table.from_batches(pieces))
    try:
        raw = con.sql(_BLOCK_SQL if _may_be_lax(block) else _STRICT_BLOCK_SQL).to_arrow_table()
    except duckdb.Error:  # not JSON (or an escaped lone surrogate, ...): per line
        raise Irregular("malformed") from None
    finally:
        con.unregister("block")
    if pc.any(raw["irregular"]).as_py() or not raw["line_no"].equals(pa.chunked_array([numbers])):
        raise Irregular("a field unknown or repeated, or text DuckDB's parser is laxer with")
    arrays = {"line": numbers}
    for c in COLUMNS:
        arrays[c.name] = _column(c, raw[c.name].combine_chunks().cast(pa.string()), numbers)
    return pa.RecordBatch.from_pydict(arrays)


# A field's JSON text (DuckDB hands numbers over as written, strings re-escaped) -> its value.
_INTEGER = r"^-?[0-9]+$"
_NUMBER = r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"


def _column(column: Any, texts: pa.Array, numbers: pa.Array) -> pa.Array:
    """The column's values from their JSON texts (null: the field is left out), as convert() types them."""
    nulls = pc.equal(texts, "null")
    if column.name in NO_NULL and pc.any(nulls).as_py():
        raise Irregular(f"{column.name} null")
    texts = pc.if_else(nulls, pa.scalar(None, pa.string()), texts)
    if column.name == "payload":
        _all_start(texts, "{")
        return _payloads(texts)
    if column.type == TIMESTAMP:
        return _times(texts)
    if pa.types.is_floating(column.type):
        _all(texts, _NUMBER)
        return _finite(texts.cast(pa.float64()))
    if pa.types.is_integer(column.type):
        _all(texts, _INTEGER)
        values = _cast(texts, pa.int64())
        if column.name == "seq":  # the native format's one default: the line number
            values = pc.coalesce(values, numbers)
        return as_int32(values) if column.type == pa.int32() else values
    _all_start(texts, '"')
    return _strings(texts)


def _all(texts: pa.Array, pattern: str) -> None:
    if texts.null_count < len(texts) and not pc.all(pc.match_substring_regex(texts, pattern)).as_py():
        raise Irregular(f"a value not matching {pattern}")


def _all_start(texts: pa.Array, prefix: str) -> None:
    """_all for a pattern that is a literal start: a tenth of the regular expression's time."""
    if texts.null_count < len(texts) and not pc.all(pc.starts_with(texts, prefix)).as_py():
        raise Irregular(f"a value not starting with {prefix}")


def _cast(texts: pa.Array, to: pa.DataType) -> pa.Array:
    try:
        return texts.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # out of range
        raise Irregular(f"not a {to}") from None


def _strings(texts: pa.Array) -> pa.Array:
    """JSON string literals -> their text; those with escapes through orjson, one by one."""
    escaped = pc.match_substring(texts, "\\")
    if not pc.any(escaped).as_py():
        return pc.utf8_slice_codeunits(texts, 1, -1)
    return pa.array([None if s is None else orjson.loads(s) for s in texts.to_pylist()], pa.string())


def _payloads(texts: pa.Array) -> pa.Array:
    try:
        canonical = [None if t is None else orjson.dumps(orjson.loads(t), option=PAYLOAD_OPTIONS)
                     for t in texts.to_pylist()]
    except (orjson.JSONDecodeError, TypeError):
        raise Irregular("payload orjson refuses") from None
    return pa.array(canonical, pa.binary()).cast(pa.string())


def _times(texts: pa.Array) -> pa.Array:
    """ISO-8601 strings or epoch seconds, as rows._epoch_us reads them."""
    quoted = pc.fill_null(pc.starts_with(texts, '"'), False)
    strings, others = pc.if_else(quoted, texts, None), pc.if_else(quoted, None, texts)
    parts = []
    if strings.null_count < len(strings):
        parts.append(iso_micros(_strings(strings)))
    if others.null_count < len(others):
        _all(others, _NUMBER)
        parts.append(epoch_micros(_finite(others.cast(pa.float64()))))
    if not parts:
        return pa.nulls(len(texts), TIMESTAMP)
    return (pc.coalesce(*parts) if len(parts) > 1 else parts[0]).cast(pa.int64()).cast(TIMESTAMP)


def _may_be_lax(block: bytes) -> bool:
    """Whether any line may hold text LAX matches: when none can, the block's query skips the
    per-line regular expression (a third of its time). Checked on the whole block at memory
    speed: a comma followed by a space or a closing bracket."""
    data = np.frombuffer(block, np.uint8)
    return bool(AFTER_COMMA_LAX[data[np.flatnonzero(data[:-1] == ord(",")) + 1]].any())


def _finite(numbers: pa.Array) -> pa.Array:
    if numbers.null_count < len(numbers) and not pc.all(pc.is_finite(numbers)).as_py():
        raise Irregular("not finite")
    return numbers


def _lines(block: bytes, max_line_bytes: int) -> pa.Array:
    """The block's lines (each with its newline) as an Arrow string array, without copying them."""
    if not block.endswith(b"\n"):
        raise Irregular("last line without its newline")  # maybe a write cut short: per line
    data = np.frombuffer(block, np.uint8)
    offsets = np.concatenate(([0], np.flatnonzero(data == 10) + 1)).astype(np.int32)
    if np.diff(offsets).max() > max_line_bytes or np.isin(data[offsets[:-1]], WHITESPACE).any():
        raise Irregular("a line over the limit, or blank, or starting with spaces")
    lines = pa.Array.from_buffers(pa.string(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(block)])
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:
        raise Irregular("not UTF-8") from None
    return lines


def _per_line(block: bytes, first: int, file: SourceFile, ctx: AdapterContext) -> Iterator[tuple[int, dict[str, Any]]]:
    """The block's events as the per-line reader gives them (records.py, events.py), in order."""
    lines = block.split(b"\n")
    last = lines.pop()  # b"" after a final newline, else a last line without one
    limit = ctx.limits.max_line_bytes
    for number, line in enumerate(lines, start=first):
        if len(line) + 1 > limit:
            raise BadInputError(file.display, f"record longer than the {limit}-byte limit", line=number)
        if line.strip():  # with its newline, as the per-line reader parses it: orjson's words for a cut line differ
            yield number, _event(parse_record(line + b"\n", file, number), file, number)
    if last:
        number = first + len(lines)
        if len(last) > limit:
            raise BadInputError(file.display, f"record longer than the {limit}-byte limit", line=number)
        if last.strip():
            try:  # spool files may end in a line a crash cut short (records.py)
                record = parse_record(last, file, number)
            except BadInputError:
                torn_tail_skipped(file, number)
                return
            yield number, _event(record, file, number)


def _event(record: dict[str, Any], file: SourceFile, number: int) -> dict[str, Any]:
    if "format" in record:
        raise BadInputError(file.display, "a header line in the middle of the file (concatenated files?)",
                            line=number, field="format")
    record.setdefault("seq", number)
    return record


def _block_sql(lax_check: str) -> str:
    paths = ", ".join(f"'$.{c.name}'" for c in COLUMNS)
    # Each field's JSON text as a column of its own, taken out of the list here, on every core.
    fields = ", ".join(f'v[{i}] as "{c.name}"' for i, c in enumerate(COLUMNS, start=1))
    # A line is regular when its keys are exactly the known fields it holds, each once: its key
    # count (repeats included) equals the count of known paths present (a JSON null is present,
    # as the text 'null'). Counting, not comparing key lists (list_distinct, list_has_all), is a
    # third of the query's time. Rows come back in the block's order (preserve_insertion_order,
    # DuckDB's default; checked).
    return f"""
        select line_no, coalesce({lax_check} or len(json_keys(line)) <> list_count(v), true) as irregular, {fields}
        from (select line_no, line, json_extract(line, [{paths}])::VARCHAR[] as v from block)"""


_BLOCK_SQL = _block_sql(f"regexp_matches(line, '{LAX}')")
_STRICT_BLOCK_SQL = _block_sql("false")  # for a block _may_be_lax() cleared
