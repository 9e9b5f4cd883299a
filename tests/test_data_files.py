"""The data files a commit adds (warehouse/datafiles.py): what the Delta log says of each is true.

Readers skip files on these statistics (delta-rs, Spark, polars): a bound that is too
narrow would make them miss events, silently.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import llm_call, write_native

import tracewh as tw
from tracewh.errors import StoreError
from tracewh.demo.agent_runs import write_demo_runs
from tracewh.warehouse import datafiles
from tracewh.warehouse.datafiles import MAX_STRING_BOUND, _millis


def _adds(wh: Path) -> list[dict]:
    log = sorted((wh / "events" / "_delta_log").glob("*.json"))
    return [json.loads(line)["add"] for path in log for line in path.read_text().splitlines() if '"add"' in line]


def _as_stat(value):
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return value


@pytest.mark.parametrize(("one_copy_rows", "small_rows"), [(datafiles.ONE_COPY_ROWS, 0), (0, 0), (0, 20)],
                         ids=["one COPY", "a COPY per partition", "the small partitions in one COPY, the rest alone"])
def test_every_file_holds_what_its_statistics_say(tmp_path, monkeypatch, one_copy_rows, small_rows):
    monkeypatch.setattr(datafiles, "ONE_COPY_ROWS", one_copy_rows)
    monkeypatch.setattr(datafiles, "SMALL_PARTITION_ROWS", small_rows)
    wh = tmp_path / "wh"
    tw.open(wh).ingest(write_demo_runs(tmp_path / "runs", tasks=5))
    tw.open(wh).ingest([write_native(tmp_path / "long.jsonl", [llm_call("r", i, model="m" * (i + 60)) for i in range(9)])])
    adds = _adds(wh)
    assert len(adds) > 10 and all(a["path"].endswith(".zstd.parquet") for a in adds)
    per_partition = tw.open(wh).sql("select benchmark, kind, count(*) from events group by all").fetchall()
    assert sorted(per_partition) == sorted(
        (b, k, sum(json.loads(a["stats"])["numRecords"] for a in adds if a["partitionValues"] == {"benchmark": b, "kind": k}))
        for b, k, _ in per_partition)
    assert tw.open(wh).sql("select count(*) from events").fetchall() == [(sum(json.loads(a["stats"])["numRecords"]
                                                                              for a in adds),)]
    for add in adds:
        table = pq.read_table(wh / "events" / add["path"])
        stats = json.loads(add["stats"])
        assert stats["numRecords"] == table.num_rows and add["size"] == (wh / "events" / add["path"]).stat().st_size
        assert add["partitionValues"] == {"benchmark": add["path"].split("/")[0].split("=")[1],
                                          "kind": add["path"].split("/")[1].split("=")[1]}
        for name, nulls in stats["nullCount"].items():
            assert table[name].null_count == nulls, (add["path"], name)
        for name, low in stats["minValues"].items():
            values = table[name].drop_null()
            assert _as_stat(pc.min(values).as_py()) >= low and _as_stat(pc.max(values).as_py()) <= stats["maxValues"][name]
    long_models = [json.loads(a["stats"]) for a in adds if "kind=llm_call" in a["path"] and "benchmark=custom" in a["path"]]
    assert long_models and all("model" not in s["minValues"] for s in long_models)  # over MAX_STRING_BOUND: no bound
    assert all(len(v) <= MAX_STRING_BOUND for a in adds for v in json.loads(a["stats"])["maxValues"].values()
               if isinstance(v, str))


@pytest.mark.parametrize(("when", "floor", "ceil"), [
    ("2026-05-01 10:00:00.000001+00", "2026-05-01T10:00:00.000Z", "2026-05-01T10:00:00.001Z"),
    ("2026-05-01 23:59:59.9995+00", "2026-05-01T23:59:59.999Z", "2026-05-02T00:00:00.000Z"),
    ("2026-05-01 12:00:00+02", "2026-05-01T10:00:00.000Z", "2026-05-01T10:00:00.000Z"),
])
def test_time_bounds_widen_to_whole_milliseconds(when, floor, ceil):
    import math

    assert (_millis(datetime.fromisoformat(when), math.floor), _millis(datetime.fromisoformat(when), math.ceil)) == (floor, ceil)


def test_a_delta_reader_finds_every_event_through_the_log(tmp_path):
    """polars over delta-rs: the files, their partition values and types as the log gives them."""
    wh = tmp_path / "wh"
    tw.open(wh).ingest(write_demo_runs(tmp_path / "runs", tasks=5))
    cut = tw.open(wh).sql("select ts from events where ts is not null order by ts limit 1 offset 40").fetchall()[0][0]
    cut = cut.astimezone(timezone.utc)  # DuckDB names the zone Etc/UTC, which polars will not compare with UTC
    run = tw.open(wh).sql("select max(run_id) from events").fetchall()[0][0]
    expected = tw.open(wh).sql("select count(*) from events where ts >= ? and run_id = ?", [cut, run]).fetchall()[0][0]
    lazy = pl.scan_delta(str(wh / "events")).filter((pl.col("ts") >= cut) & (pl.col("run_id") == run))
    assert expected > 0 and lazy.select(pl.len()).collect().item() == expected


def test_a_commit_that_fails_after_the_files_moved_in_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    from deltalake import DeltaTable

    wh = tmp_path / "wh"
    first = write_native(tmp_path / "a.jsonl", [llm_call("a", i) for i in range(5)])
    second = write_native(tmp_path / "b.jsonl", [llm_call("b", i) for i in range(7)])
    tw.open(wh).ingest([first])

    def refused(*args, **kwargs):
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as m:
        m.setattr(DeltaTable, "create_write_transaction", refused)
        with pytest.raises(StoreError, match="Input/output error.*nothing was committed"):
            tw.open(wh).ingest([second])
    files = set((wh / "events").rglob("*.parquet"))
    assert tw.open(wh).sql("select count(*) from events").fetchall() == [(5,)] and len(files) == 2  # one an orphan
    removed = tw.open(wh).store.doctor()["uncommitted data files"]
    assert len(removed) == 1 and set((wh / "events").rglob("*.parquet")) == files - {Path(removed[0])}
    tw.open(wh).ingest([second])
    assert tw.open(wh).sql("select count(*) from events").fetchall() == [(12,)]
