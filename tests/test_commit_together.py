"""Small sources commit together (ingest/pipeline.py's _Commits, Store.commit_together): one gate
query, one data-file write and one Delta commit for many batches, each still a batch of its own in
the ledger. What lands, what `tracewh log` lists and what each source reports are what committing
them one by one gives; a group where that could differ (a batch refused or flagged, an event stored
already or repeated, the same archive twice) commits one by one."""

from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from helpers import zip_folder

import tracewh as tw
from tracewh.errors import BadInputError, QualityError
from tracewh.ingest import pipeline
from tracewh.warehouse.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from generate import write_decisionbench  # noqa: E402


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> list[Path]:
    """Five DecisionBench runs, a zip each: a small sweep."""
    tmp = tmp_path_factory.mktemp("sweep")
    (folder,) = write_decisionbench(tmp / "raw", 0.004, seed=5)
    runs = sorted(p for p in folder.iterdir() if p.is_dir())[:5]
    return [zip_folder(run, tmp / "zips" / f"{run.name}.zip") for run in runs]


def _rewritten(archive: Path, out: Path, change: Any) -> Path:
    """`archive` with its first trace's text passed through `change`."""
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        trace = min(n for n in src.namelist() if n.startswith("traces/"))
        for name in src.namelist():
            data = src.read(name)
            dst.writestr(name, change(data.decode()).encode() if name == trace else data)
    return out


def ingest(wh: Path, paths: list[Path], together: bool, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    """Each source's report (versions left out: together they share one), or the error."""
    monkeypatch.setattr(pipeline, "GROUP_SOURCES", 64 if together else 1)  # 1: each batch commits alone
    try:
        report = tw.open(wh).ingest(paths, **options)
    except (BadInputError, QualityError) as e:
        return f"{type(e).__name__}: {e}"
    return [(s.source, s.adapters, s.read, s.commit.added, s.commit.duplicates, s.commit.already_ingested,
             s.commit.kinds, s.flags) for s in report.sources]


def stored(wh: Path) -> list[tuple]:
    if not (wh / "events").exists():
        return []
    return tw.open(wh).sql("select * from events_raw order by event_id").fetchall()


def logged(wh: Path) -> list[tuple]:
    return [(b.source, b.digest, b.key, b.batch_id, b.adapters, b.events, b.duplicates, b.kinds)
            for b in Store(wh).batches()]


def both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: list[Path], before: list[Path] = (),
              **options: Any) -> Any:
    """Ingest `before` (alone), then `paths`, together and one by one, each into a store of its own:
    the outcomes, stored events and logs must agree. Returns the outcome of `paths`."""
    outcomes = []
    for together in (True, False):
        wh = tmp_path / ("together" if together else "alone")
        for path in before:
            tw.open(wh).ingest([path])
        outcome = ingest(wh, paths, together, monkeypatch, **options)
        outcomes.append((outcome, stored(wh), logged(wh)))
        assert not (wh / "_staging").exists() or not any((wh / "_staging").iterdir())
    assert outcomes[0] == outcomes[1]
    return outcomes[0][0]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_sweep_lands_in_one_commit_with_each_archive_a_batch_of_its_own(tmp_path, monkeypatch, zips, workers):
    outcome = both_ways(tmp_path, monkeypatch, zips, workers=workers)
    assert [row[3] > 0 and row[4] == 0 for row in outcome] == [True] * len(zips)
    together = Store(tmp_path / "together")
    assert together.version() == 1  # version 0 made the table; one commit holds every batch
    assert {b.version for b in together.batches()} == {1}
    assert [b.source for b in together.batches()] == [str(z) for z in zips]
    assert Store(tmp_path / "alone").version() == len(zips)


def test_an_archive_ingested_again_is_known_from_a_commit_of_several(tmp_path, monkeypatch, zips):
    wh = tmp_path / "wh"
    ingest(wh, zips[:3], True, monkeypatch)
    again = ingest(wh, zips, True, monkeypatch)
    assert [row[5] for row in again] == [True, True, True, False, False]  # already_ingested
    fresh = Store(wh)  # reads the keys off the log anew
    assert all(fresh.has_batch(b.key) for b in fresh.batches()) and not fresh.has_batch("0" * 64)
    assert len(fresh.batches()) == len(zips) and fresh.version() == 2


def test_a_source_the_gate_refuses_stops_the_sweep_where_one_by_one_would(tmp_path, monkeypatch, zips):
    bad = _rewritten(zips[2], tmp_path / "negative.zip", lambda text: text.replace('"latency_s": ', '"latency_s": -', 1))
    outcome = both_ways(tmp_path, monkeypatch, [zips[0], zips[1], bad, zips[3]])
    assert outcome.startswith("QualityError: ") and "negative.zip" in outcome and "latency_s" in outcome
    assert [b[0] for b in logged(tmp_path / "together")] == [str(zips[0]), str(zips[1])]


def test_a_flagged_or_held_source_reports_as_it_does_alone(tmp_path, monkeypatch, zips):
    bad = _rewritten(zips[1], tmp_path / "negative.zip", lambda text: text.replace('"latency_s": ', '"latency_s": -', 1))
    outcome = both_ways(tmp_path, monkeypatch, [zips[0], bad, zips[2]], quarantine=True)
    assert [row[0] for row in outcome] == [str(zips[0]), str(bad), str(zips[2])]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_record_commits_the_sources_before_it_and_none_after(tmp_path, monkeypatch, zips, workers):
    bad = _rewritten(zips[1], tmp_path / "broken.zip", lambda text: "not json\n" + text)
    outcome = both_ways(tmp_path, monkeypatch, [zips[0], bad, zips[2], zips[3], zips[4]], workers=workers)
    assert outcome.startswith("BadInputError: ") and "broken.zip" in outcome
    assert [b[0] for b in logged(tmp_path / "together")] == [str(zips[0])]


def test_events_already_stored_or_repeated_across_sources_count_as_duplicates(tmp_path, monkeypatch, zips):
    """Native exports keep their event ids: two overlapping halves of one export, and a third file
    whose events a store holds already."""
    source = tmp_path / "source"
    tw.open(source).ingest(zips[:2])
    export = tmp_path / "export.jsonl"
    tw.open(source).export_events(export)
    header, *lines = export.read_text().splitlines(keepends=True)
    first, second, third = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "third.jsonl"
    first.write_text(header + "".join(lines[: len(lines) * 2 // 3]))
    second.write_text(header + "".join(lines[len(lines) // 3:]))
    third.write_text(header + "".join(lines[:10]))
    outcome = both_ways(tmp_path, monkeypatch, [first, second, third])
    assert outcome[1][4] == len(lines) * 2 // 3 - len(lines) // 3 and outcome[2][4] == 10  # duplicates
    stored_before = both_ways(tmp_path / "stored", monkeypatch, [second, first], before=[third])
    assert stored_before[1][4] > 10


def test_the_same_archive_twice_is_one_batch(tmp_path, monkeypatch, zips):
    copy = tmp_path / "copy.zip"
    shutil.copy(zips[0], copy)
    outcome = both_ways(tmp_path, monkeypatch, [zips[0], zips[1], copy])
    assert [row[5] for row in outcome] == [False, False, True]


def test_one_run_in_two_archives_commits_as_it_does_one_by_one(tmp_path, monkeypatch, zips):
    """Together, the second archive's lines look out of order after the first's (same run, same
    files): the gate's finding of the union alone, which sends each archive to its own gate."""
    again = _rewritten(zips[0], tmp_path / "again.zip", lambda text: text)
    outcome = both_ways(tmp_path, monkeypatch, [zips[0], again])
    assert [row[3] > 0 and row[5] is False for row in outcome] == [True, True]
