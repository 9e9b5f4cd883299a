"""The store: time travel, a log of batches, files other engines read, concurrent writers, crashes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
from helpers import llm_call, store_version, tracewh, write_native

import tracewh as tw
from tracewh.demo.agent_runs import write_demo_runs


def _batch(tmp_path: Path, name: str, n: int) -> Path:
    return write_native(tmp_path / f"{name}.jsonl", [llm_call(name, i, prompt_tokens=i) for i in range(n)])


def test_as_of_queries_the_store_as_it_was(tmp_path, wh):
    tracewh("ingest", _batch(tmp_path, "a", 3), "-w", wh, check=True)
    tracewh("ingest", _batch(tmp_path, "b", 4), "-w", wh, check=True)
    now = tracewh("sql", "select count(*) as n from events", "-w", wh, "-f", "csv", check=True)
    then = tracewh("sql", "select count(*) as n from events", "-w", wh, "-f", "csv", "--as-of", "1", check=True)
    empty = tracewh("sql", "select count(*) as n from events", "-w", wh, "-f", "csv", "--as-of", "0", check=True)
    assert (now.out, then.out, empty.out) == ("n\n7\n", "n\n3\n", "n\n0\n")
    missing = tracewh("sql", "select 1", "-w", wh, "--as-of", "9")
    assert missing.code == 1 and "version 9 does not exist" in missing.err


def test_log_lists_committed_batches(tmp_path, wh):
    tracewh("ingest", _batch(tmp_path, "a", 3), "-w", wh, check=True)
    tracewh("ingest", _batch(tmp_path, "b", 4), "-w", wh, check=True)
    rows = pl.read_csv(tracewh("log", "-w", wh, "-f", "csv", check=True).out.encode())
    assert rows["version"].to_list() == [1, 2]
    assert rows["events"].to_list() == [3, 4]
    assert [Path(s).name for s in rows["source"]] == ["a.jsonl", "b.jsonl"]
    assert rows["kinds"].to_list() == ["llm_call 3", "llm_call 4"]
    assert all(len(d) == 16 for d in rows["digest"])


def test_parquet_is_readable_without_tracewh(tmp_path, wh):
    tracewh("ingest", *write_demo_runs(tmp_path / "runs", tasks=5), "-w", wh, check=True)
    expected = tw.open(wh).sql("select count(*) from events").fetchall()[0][0]
    files = str(wh / "events" / "**" / "*.parquet")

    by_duckdb = duckdb.read_parquet(files, hive_partitioning=True).aggregate("count(*)").fetchall()[0][0]
    frame = pl.scan_parquet(files, hive_partitioning=True).select(pl.len(), pl.col("kind").n_unique()).collect()
    by_delta = pl.scan_delta(str(wh / "events")).select(pl.len()).collect().item()
    assert by_duckdb == frame.item(0, 0) == by_delta == expected
    assert frame.item(0, 1) == 10  # kind comes back from the hive partition folders
    assert all(p.name.endswith(".zstd.parquet") for p in (wh / "events").rglob("*.parquet"))


def test_two_concurrent_ingests_both_land(tmp_path, wh):
    a, b = _batch(tmp_path, "a", 2000), _batch(tmp_path, "b", 3000)
    cmd = [sys.executable, "-m", "tracewh", "ingest", "-w", str(wh)]
    procs = [subprocess.Popen(cmd + [str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for p in (a, b, a)]
    codes = [p.wait(timeout=120) for p in procs]
    assert codes == [0, 0, 0], [p.stderr.read() for p in procs]
    assert store_version(wh) == 2  # the repeated archive landed once
    assert tw.open(wh).sql("select run_id, count(*) from events group by 1 order by 1").fetchall() == [
        ("a", 2000), ("b", 3000)]


def test_a_writer_sees_batches_other_processes_committed(tmp_path, wh):
    """A long-lived writer reads only the log's new commits for idempotency; what another
    process commits meanwhile still counts, and a store made anew starts from nothing."""
    from tracewh.warehouse.store import Store

    a = _batch(tmp_path, "a", 3)
    writer = tw.open(wh)
    writer.ingest([a])
    assert writer.store.has_batch(writer.log()[0].key)
    tracewh("ingest", _batch(tmp_path, "b", 4), "-w", wh, check=True)  # another process
    key_b = Store(wh).batches()[-1].key
    assert writer.store.has_batch(key_b)
    assert writer.ingest([tmp_path / "b.jsonl"]).sources[0].commit.already_ingested
    assert store_version(wh) == 2

    shutil.rmtree(wh)  # the store deleted and made anew under the same path, as long as before
    tracewh("ingest", a, "-w", wh, check=True)
    tracewh("ingest", _batch(tmp_path, "c", 2), "-w", wh, check=True)
    assert not writer.store.has_batch(key_b) and store_version(wh) == 2
    writer.ingest([tmp_path / "b.jsonl"])
    assert tw.open(wh).sql("select run_id, count(*) from events group by 1 order by 1").fetchall() == [
        ("a", 3), ("b", 4), ("c", 2)]


def test_delta_checkpoints_survive_later_ingests(tmp_path, wh):
    """Delta writes a Parquet checkpoint every 100 commits; cleanup must never take it for a stray file."""
    from deltalake import DeltaTable

    for name in ("a", "b"):
        tw.open(wh).ingest([_batch(tmp_path, name, 3)])
    DeltaTable(str(wh / "events")).create_checkpoint()
    checkpoints = list((wh / "events" / "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoints
    tw.open(wh).ingest([_batch(tmp_path, "c", 3)])
    tw.open(wh).store.doctor()
    assert all(p.exists() for p in checkpoints)
    assert tw.open(wh).sql("select count(*) from events").fetchall() == [(9,)] and store_version(wh) == 3


def test_latest_version_follows_other_writers_and_a_store_made_again(tmp_path):
    """The newest version is remembered between asks (listing a log of a day's live commits cost
    every query more than the query), yet always the log's: commits by other processes are
    found, and a store removed and made again with fewer versions is listed anew."""
    from tracewh.warehouse.layout import latest_version

    wh = tmp_path / "a store"
    for name in ("a", "b", "c"):
        tracewh("ingest", _batch(tmp_path, name, 2), "-w", wh, check=True)
    assert latest_version(wh / "events") == 3
    tracewh("ingest", _batch(tmp_path, "d", 2), "-w", wh, check=True)  # another process's commit
    assert latest_version(wh / "events") == 4
    shutil.rmtree(wh)
    assert latest_version(wh / "events") is None
    tracewh("ingest", _batch(tmp_path, "e", 2), "-w", wh, check=True)
    assert latest_version(wh / "events") == 1
    assert tracewh("sql", "select count(*) from events", "-w", wh, "-f", "csv", check=True).out == "count_star()\n2\n"
