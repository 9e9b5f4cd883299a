"""A shard's rows as events: Arrow columns in the schema's types (EventBatch), numbered by row.

The rows are events already, ids and all: nothing is mapped, only checked. Payloads are parsed
and written again as ingest writes them (sorted keys), so a payload edited by hand stores as
any other. A batch whose payloads are not all JSON objects goes to the pipeline as events one
by one, whose conversion names the shard, the row and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa

from ....schema import COLUMNS
from ...bulk import Irregular
from ...context import AdapterContext
from ...rows import PAYLOAD_OPTIONS
from ...sources import SourceFile
from ..base import EventBatch, Located
from . import records


def events(file: SourceFile, ctx: AdapterContext) -> Iterator[Located | EventBatch]:
    with records.parquet_file(file) as shard:
        records.checked_schema(shard, file)
        total, first = max(shard.metadata.num_rows, 1), 1
        for batch in records.batches(shard, file):
            yield from _events(batch, first, file)
            first += batch.num_rows
            ctx.progress(file.stored_bytes * batch.num_rows // total)


def _events(batch: pa.RecordBatch, first: int, file: SourceFile) -> Iterator[Located | EventBatch]:
    if not batch.num_rows:
        return
    try:
        columns = _columns(batch, first)
    except Irregular:
        yield from _each(batch, first, file)
        return
    yield EventBatch(file, columns, lambda: _each(batch, first, file))


def _columns(batch: pa.RecordBatch, first: int) -> pa.RecordBatch:
    n = batch.num_rows
    arrays: dict[str, pa.Array] = {"line": pa.array(range(first, first + n), pa.int64())}
    for c in COLUMNS:
        given = batch.column(c.name) if c.name in batch.schema.names else pa.nulls(n, c.type)
        arrays[c.name] = _payloads(given) if c.name == "payload" else given.cast(c.type)
    return pa.RecordBatch.from_pydict(arrays)


def _payloads(texts: pa.Array) -> pa.Array:
    canonical = []
    for text in texts.cast(pa.string()).to_pylist():
        if text is None:
            canonical.append(None)
            continue
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise Irregular("a payload that is not JSON") from None
        if not isinstance(value, dict):
            raise Irregular("a payload that is not a JSON object")
        canonical.append(orjson.dumps(value, option=PAYLOAD_OPTIONS))
    return pa.array(canonical, pa.binary()).cast(pa.string())


def _each(batch: pa.RecordBatch, first: int, file: SourceFile) -> Iterator[Located]:
    """The rows as event dicts (what the pipeline converts one by one): fields left null are left out."""
    for number, row in enumerate(batch.to_pylist(), start=first):
        event: dict[str, Any] = {k: v for k, v in row.items() if v is not None}
        if isinstance(event.get("payload"), str):
            try:
                event["payload"] = orjson.loads(event["payload"])
            except orjson.JSONDecodeError:
                pass  # left as text: the conversion refuses it, naming the field
        yield file, number, event
