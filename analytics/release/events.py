"""Which events a release holds, and how they leave the store: every stored event of the chosen
runs (`events_raw`: corrections and what they correct alike, so each view answers from the
release as from the store), in run and seq order, without content when asked (schema/content.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import orjson
import pyarrow as pa

from ...errors import NotFoundError, UsageError
from ...ingest.rows import PAYLOAD_OPTIONS
from ...schema import COLUMN_NAMES
from ...schema.content import without_content
from .. import Queryable
from .shards import READ_ROWS

_ORDER = "order by run_id, seq, event_id"
CHUNK_EVENTS = 100_000


def chosen_runs(wh: Queryable, runs: Sequence[str], where: str | None) -> list[str] | None:
    """The run ids to release: those listed (each must exist) that also match `where` (a checked
    filter over the `runs` view); None for every event of the store."""
    from ...queries.engine import engine_errors
    from ...queries.guard import prepare_query

    if not runs and where is None:
        return None
    chosen = list(dict.fromkeys(runs))
    if chosen:
        known = {r for r, in wh.sql("select distinct run_id from events_raw where list_contains($1, run_id)",
                                    [chosen]).fetchall()}
        if missing := [r for r in chosen if r not in known]:
            raise NotFoundError(f"no run {missing[0]!r} in the store" + (f" (and {len(missing) - 1} more)"
                                                                        if len(missing) > 1 else ""))
    if where is not None:
        # The filter runs as DuckDB regenerated it from its own parse, never spliced as typed.
        query = prepare_query(f"select run_id from runs where {where}").sql
        with engine_errors():  # a filter that fails as it runs (a bad cast) is the user's, in one line
            matching = {r for r, in wh.sql(query).fetchall()}
        chosen = [r for r in chosen if r in matching] if chosen else sorted(matching)
    if not chosen:
        raise UsageError("no run matches: nothing to release (`tracewh sql \"select run_id from runs\"` lists them)")
    return chosen


def event_batches(wh: Queryable, run_ids: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The released events, a batch at a time, in release order: a few runs at a time (about
    CHUNK_EVENTS events), each sorted on its own, so memory follows the chunk, not the store
    (a 500k-event store: 450 MB at the peak sorted at once, 245 MB in chunks)."""
    columns = ", ".join(COLUMN_NAMES)
    counts = wh.sql("select run_id, count(*) from events_raw where $1::varchar[] is null or list_contains($1, run_id) "
                    "group by run_id order by run_id", [run_ids]).fetchall()
    for chunk in _chunks(counts):
        yield from wh.sql(f"select {columns} from events_raw where list_contains($1, run_id) {_ORDER}",
                          [chunk]).to_arrow_reader(READ_ROWS)


def _chunks(counts: list[tuple[str, int]]) -> Iterator[list[str]]:
    """Consecutive runs (in release order) of at most CHUNK_EVENTS events together; a larger run alone."""
    chunk: list[str] = []
    size = 0
    for run_id, n in counts:
        if chunk and size + n > CHUNK_EVENTS:
            yield chunk
            chunk, size = [], 0
        chunk.append(run_id)
        size += n
    if chunk:
        yield chunk


def strip_content(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with every payload's content removed (schema/content.py), written as ingest writes
    payloads (sorted keys), so equal payloads stay equal text."""
    payloads = batch.column("payload").to_pylist()
    stripped = [None if p is None else orjson.dumps(without_content(orjson.loads(p)), option=PAYLOAD_OPTIONS).decode()
                for p in payloads]
    index = batch.schema.get_field_index("payload")
    return batch.set_column(index, batch.schema.field(index), pa.array(stripped, pa.string()))


class IdDigest:
    """sha256 over the released event ids in release order, one per line: what the same events,
    ingested anywhere, give again (`select event_id from events_raw order by run_id, seq, event_id`)."""

    def __init__(self) -> None:
        self.hash, self.events = hashlib.sha256(), 0

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        ids = batch.column("event_id").to_pylist()
        self.hash.update("".join(f"{i}\n" for i in ids).encode())
        self.events += len(ids)
        return batch

    def hexdigest(self) -> str:
        return self.hash.hexdigest()
