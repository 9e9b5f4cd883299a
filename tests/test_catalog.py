"""The compiled view catalog (queries/catalog.py) is a cache: queries see every ingest and every
edit of a view file, deleting it changes no answer, and readers stay consistent while a writer
commits."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import llm_call, write_native

import tracewh as tw
from tracewh.errors import QueryError
from tracewh.queries import catalog, guard, registry

HEADLINE = ("d52_rs_at_k", "d52_critical", "ecb_table1", "ecb_role_accuracy", "dcb_quality", "dcb_fidelity",
            "dcb_self_preference", "dcb_ceiling")


def score(run: str, seq: int, value: float) -> dict:
    return {"run_id": run, "benchmark": "custom", "kind": "score", "seq": seq, "score": value,
            "payload": {"metric": "pass"}}


def ingest(wh: Path, name: str, events: list[dict]) -> None:
    tw.open(wh).ingest([write_native(wh.parent / name, events)])


def count(wh: Path) -> int:
    return tw.open(wh).query("select count(*) as n from events").tuples()[0][0]


def rounded(rows: list[tuple]) -> list[tuple]:
    """Rows with doubles to 9 places: a parallel sum's last bits depend on its threads' order."""
    return [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in rows]


def catalogs(wh: Path) -> list[Path]:
    return sorted((wh / catalog.FOLDER).glob("*.duckdb"))


def test_a_query_after_an_ingest_sees_the_new_events(tmp_path):
    wh = tmp_path / "wh"
    ingest(wh, "a.jsonl", [llm_call("r1", i) for i in range(3)])
    assert count(wh) == 3
    ingest(wh, "b.jsonl", [llm_call("r2", i) for i in range(4)])
    assert count(wh) == 7
    assert len(catalogs(wh)) == 2  # one per store version, each a whole DuckDB file


def test_a_long_lived_warehouse_sees_what_another_process_committed(tmp_path):
    """The service holds one Warehouse for its whole life; ingests come from elsewhere."""
    wh = tmp_path / "wh"
    ingest(wh, "a.jsonl", [llm_call("r1", i) for i in range(3)])
    held = tw.open(wh)
    assert held.query("select count(*) as n from llm_calls").tuples()[0][0] == 3
    subprocess.run([sys.executable, "-m", "tracewh", "ingest", write_native(tmp_path / "b.jsonl", [llm_call("r2", 0)]),
                    "-w", wh], check=True, capture_output=True)
    assert held.query("select count(*) as n from llm_calls").tuples()[0][0] == 4


def test_deleting_the_catalog_changes_no_answer(tmp_path):
    from tracewh.demo.build import build_demo

    demo_store = build_demo(tmp_path, tasks=3)[0].path
    wh = tw.open(demo_store)
    before = {view: rounded(wh.query(f"select * from {view} order by all").tuples()) for view in ("events_raw", *HEADLINE)}
    assert catalogs(demo_store)
    shutil.rmtree(demo_store / catalog.FOLDER)
    after = {view: rounded(tw.open(demo_store).query(f"select * from {view} order by all").tuples()) for view in before}
    assert after == before
    assert catalogs(demo_store)  # made again by the first query


@pytest.fixture
def views_copy(tmp_path, monkeypatch) -> Path:
    """The view files copied to a folder the test may edit; the registry reads them from there."""
    copy = tmp_path / "queries"
    for sql in registry.QUERIES_DIR.glob("*/*.sql"):
        (copy / sql.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(sql, copy / sql.parent.name / sql.name)
    monkeypatch.setattr(registry, "QUERIES_DIR", copy)
    monkeypatch.setattr(catalog, "QUERIES_DIR", copy)
    forget_views()
    yield copy
    forget_views()


def forget_views() -> None:
    """What a new process starts with: no view file read yet."""
    for cached in (registry.view_headers, registry.load_views, catalog.views_digest, guard._store_relations):
        cached.cache_clear()


def test_a_store_that_cannot_keep_a_catalog_still_answers(tmp_path):
    """The catalog is a cache: where its folder cannot be made (here a file is in the way, as
    read-only media or a full disk would refuse it), queries make their views in memory."""
    wh = tmp_path / "wh"
    ingest(wh, "a.jsonl", [llm_call("r1", i) for i in range(3)])
    shutil.rmtree(wh / catalog.FOLDER, ignore_errors=True)
    (wh / catalog.FOLDER).write_text("not a folder")
    assert count(wh) == 3
    with pytest.raises(catalog.CatalogUnavailable):
        catalog.ensure_empty_catalog(wh)


def test_editing_a_view_file_changes_the_answer(tmp_path, views_copy):
    wh = tmp_path / "wh"
    ingest(wh, "s.jsonl", [score("r1", 0, 0.25), score("r1", 1, 0.5)])
    assert tw.open(wh).query("select max(score) as top from scores").tuples()[0][0] == 0.5
    (compiled,) = catalogs(wh)
    scores = views_copy / "core" / "scores.sql"
    scores.write_text(scores.read_text().replace("    score,\n", "    score * 100 AS score,\n"))
    forget_views()
    assert tw.open(wh).query("select max(score) as top from scores").tuples()[0][0] == 50
    assert compiled not in catalogs(wh)  # same store version, other views: another catalog


READER = textwrap.dedent("""
    import sys, tracewh
    seen = []
    for _ in range(int(sys.argv[2])):
        seen.append(tracewh.open(sys.argv[1]).query("select count(*) as n from events").tuples()[0][0])
    print(*seen)
""")


def test_two_readers_while_a_writer_commits_see_whole_versions(tmp_path):
    wh, batches, size = tmp_path / "wh", 8, 5
    ingest(wh, "b0.jsonl", [llm_call("r0", i) for i in range(size)])
    files = [write_native(tmp_path / f"b{k}.jsonl", [llm_call(f"r{k}", i) for i in range(size)])
             for k in range(1, batches)]
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(wh), "25"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    writer = subprocess.run([sys.executable, "-m", "tracewh", "ingest", *map(str, files), "-w", str(wh)],
                            capture_output=True, text=True)
    assert writer.returncode == 0, writer.stderr
    whole_versions = {size * k for k in range(1, batches + 1)}
    for reader in readers:
        out, err = reader.communicate(timeout=300)
        assert reader.returncode == 0, err
        seen = [int(n) for n in out.split()]
        assert len(seen) == 25 and set(seen) <= whole_versions, seen
        assert seen == sorted(seen)  # never back to an older version
    assert count(wh) == size * batches


def test_a_view_the_data_breaks_fails_alone(tmp_path, views_copy):
    """A materialized view that cannot be computed over the store's data stays a plain view:
    it reports its error when asked, and every other query still works."""
    (views_copy / "core" / "zz_fragile.sql").write_text(
        "-- A view that casts run ids to integers.\n-- tracewh: materialize\n"
        "CREATE OR REPLACE VIEW zz_fragile AS SELECT CAST(run_id AS INTEGER) AS n FROM events;\n")
    forget_views()
    wh = tmp_path / "wh"
    ingest(wh, "a.jsonl", [llm_call("not-a-number", 0)])
    assert count(wh) == 1
    with pytest.raises(QueryError, match="Could not convert string 'not-a-number'"):
        tw.open(wh).query("select * from zz_fragile")
