"""The performance benchmark's own correctness (no timing here): its generators write what the
adapters read, and every alternative implementation computes the same numbers as the view."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import tracewh

import tracewh as tw

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from alternatives import METRICS, duckdb_raw, load_sqlite  # noqa: E402
from generate import GENERATORS  # noqa: E402
from run import SWEEP_ARCHIVES, _same, reference_ingest, sweep_archives  # noqa: E402


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, dict[str, list[Path]]]:
    tmp = tmp_path_factory.mktemp("bench")
    raw = {name: gen(tmp / "raw", 0.004, seed=3) for name, gen in GENERATORS.items()}
    tracewh("ingest", *[p for paths in raw.values() for p in paths], "-w", tmp / "wh", check=True)
    return tmp, raw


def test_generated_runs_cover_every_benchmark(sweep):
    tmp, _ = sweep
    got = tw.open(tmp / "wh").sql("select benchmark, count(distinct run_id) from events group by 1 order by 1").fetchall()
    # 6 models x 3 suites x 6 (split, condition) cells; 19 relays + the dataset; 12 models x 4 task sets
    assert got == [("decisionbench", 108), ("delegate52", 19 + 1), ("entcollabbench", 12 * 4)]


@pytest.mark.parametrize("view", sorted(METRICS))
def test_alternatives_compute_the_views_numbers(sweep, view):
    tmp, raw = sweep
    m = METRICS[view]
    root = raw[m["benchmark"]][0] if m["benchmark"] != "entcollabbench" else raw[m["benchmark"]][0].parent
    expected = tw.open(tmp / "wh").sql(m["view"]).fetchall()
    sqlite = load_sqlite(tmp / "wh", tmp / f"{view}.sqlite")
    assert expected and _same(expected, duckdb_raw(m["duckdb_raw"], root)())
    assert _same(expected, m["pandas_json"](root))
    assert _same(expected, sqlite.execute(m["sqlite"]).fetchall())


def test_reference_ingest_reads_every_record(sweep, tmp_path):
    _, raw = sweep
    seconds, records = reference_ingest(raw["entcollabbench"], tmp_path / "ref.parquet")
    lines = sum(p.read_bytes().count(b"\n") for d in raw["entcollabbench"] for p in d.rglob("*.jsonl"))
    json_files = sum(1 for d in raw["entcollabbench"] for _ in d.glob("*.json"))
    assert records == lines + json_files and seconds > 0


def test_sweep_archives_hold_the_same_runs_as_their_folders(sweep, tmp_path):
    tmp, raw = sweep
    archives = sweep_archives(raw["decisionbench"], tmp_path / "zips")
    assert len(archives) == SWEEP_ARCHIVES and all(p.suffix == ".zip" for p in archives)
    tracewh("ingest", *archives, "-w", tmp_path / "wh", check=True)
    query = "select run_id, kind, count(*) from events where kind <> 'run_attrs' group by all order by all"
    runs = sorted(p.stem for p in archives)
    from_zips = tw.open(tmp_path / "wh").sql(query).fetchall()
    from_folders = [r for r in tw.open(tmp / "wh").sql(query).fetchall() if r[0] in runs]
    assert {r[0] for r in from_zips} == set(runs) and from_zips == from_folders


def test_entcollabbench_task_times_stay_valid_past_midnight():
    """At --scale 10 a run has 3,000 tasks a minute apart: the clock must roll into the next day."""
    from datetime import datetime

    from tracewh.demo.entcollabbench_runs import _stamp

    times = [datetime.fromisoformat(_stamp(12, n).replace("Z", "+00:00")) for n in range(1, 3001)]
    assert times == sorted(set(times)) and times[0].hour == 9 and times[-1].day == 14
