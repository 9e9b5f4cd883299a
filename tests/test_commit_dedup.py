"""The commit's deduplication: streamed over the staged files, nothing of the batch left in DuckDB
for the Delta write (a table of the batch's ids grew with the batch and held memory through it)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq

from tracewh.schema import ARROW_SCHEMA
from tracewh.warehouse.batchdb import batch_connection
from tracewh.warehouse.store import Store


def _stage(folder, rows):
    folder.mkdir(parents=True, exist_ok=True)
    ts = datetime(2026, 5, 1, tzinfo=timezone.utc)
    full = [{"batch_id": "b1", "benchmark": "custom", "kind": "llm_call", "ts": ts, "schema_version": 1,
             "source": f"x.jsonl:{r['seq']}", **r} for r in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=ARROW_SCHEMA), folder / "part-0.parquet")
    return folder


def _commit(store, staged, key):
    con = batch_connection(staged)
    try:
        result = store.commit(staged, {"key": key, "digest": key, "batch_id": key}, con=con)
        temp = con.sql("select table_name from duckdb_tables() where temporary").fetchall()
        return result, temp
    finally:
        con.close()


def _stored(store):
    return sorted(store.table().to_pyarrow_table(columns=["event_id", "run_id", "seq"]).to_pylist(),
                  key=lambda r: (r["event_id"], r["seq"]))


def test_distinct_batch_is_committed_as_staged_and_leaves_nothing_in_duckdb(tmp_path):
    store = Store(tmp_path / "wh")
    staged = _stage(tmp_path / "s1", [{"event_id": f"e{i}", "run_id": "r1", "seq": i} for i in range(50)])
    result, temp = _commit(store, staged, "k1")
    assert (result.added, result.duplicates, result.kinds) == (50, 0, {"llm_call": 50})
    assert temp == []
    assert len(_stored(store)) == 50


def test_repeats_in_the_batch_and_in_the_store_are_left_out(tmp_path):
    store = Store(tmp_path / "wh")
    _commit(store, _stage(tmp_path / "s1", [{"event_id": f"e{i}", "run_id": "r1", "seq": i} for i in range(3)]), "k1")
    # e1 is stored already; e7 comes twice in the batch (its lowest seq stays)
    rows = [{"event_id": "e1", "run_id": "r2", "seq": 1}, {"event_id": "e7", "run_id": "r2", "seq": 9},
            {"event_id": "e7", "run_id": "r2", "seq": 4}, {"event_id": "e8", "run_id": "r2", "seq": 5}]
    result, temp = _commit(store, _stage(tmp_path / "s2", rows), "k2")
    assert (result.added, result.duplicates) == (2, 2)
    assert temp == []
    assert _stored(store) == [
        {"event_id": "e0", "run_id": "r1", "seq": 0}, {"event_id": "e1", "run_id": "r1", "seq": 1},
        {"event_id": "e2", "run_id": "r1", "seq": 2}, {"event_id": "e7", "run_id": "r2", "seq": 4},
        {"event_id": "e8", "run_id": "r2", "seq": 5}]
