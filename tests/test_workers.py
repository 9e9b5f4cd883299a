"""Staging on every core (ingest/workers.py): what worker processes stage commits exactly what one
process commits, source by source, and bad input is refused in the same words, with the sources
before it committed and nothing after it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import tracewh, zip_folder

import tracewh as tw
from tracewh.errors import BadInputError, QualityError
from tracewh.ingest.adapters import Group
from tracewh.ingest.adapters.native import ranges
from tracewh.ingest.sources import expand
from tracewh.ingest.workers import POOL_MIN_BYTES, StagingPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from generate import write_decisionbench, write_entcollabbench  # noqa: E402


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict[str, Any]:
    """A DecisionBench folder of several runs (a group each), three of its runs as zips, an
    EntCollabBench run folder."""
    tmp = tmp_path_factory.mktemp("sweep")
    (dcb,) = write_decisionbench(tmp / "raw", 0.004, seed=3)
    ecb = write_entcollabbench(tmp / "raw", 0.004, seed=3)[:2]
    runs = sorted(p for p in dcb.iterdir() if p.is_dir())
    zips = [zip_folder(run, tmp / "zips" / f"{run.name}.zip") for run in runs[:3]]
    return {"folder": dcb, "runs": runs, "zips": zips, "ecb": ecb}


def stored(wh: Path) -> list[tuple]:
    # --attr's run_attrs carry the time of the ingest: everything else must match to the bit
    return tw.open(wh).sql("select * exclude (ts), case when source = '--attr' then null else ts end "
                           "from events_raw order by event_id").fetchall()


def summary(report: Any) -> list[tuple]:
    return [(s.source, s.adapters, s.read, s.commit.added, s.commit.duplicates, s.commit.already_ingested,
             s.skipped_files, s.flags) for s in report.sources]


def ingest_both_ways(tmp_path: Path, paths: list[Path], **options: Any) -> list[Any]:
    """Each way into a store of its own: the results (reports or errors) and stored events, which must agree."""
    outcomes = []
    for workers in (1, 2):
        wh = tmp_path / f"workers-{workers}"
        try:
            outcome: Any = summary(tw.open(wh).ingest(paths, workers=workers, **options))
        except (BadInputError, QualityError) as e:
            outcome = f"{type(e).__name__}: {e}"
        outcomes.append((outcome, stored(wh) if (wh / "events").exists() else []))
        assert not any((wh / "_staging").iterdir()), "a staging folder outlived its ingest"
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


def test_workers_store_what_one_process_stores(tmp_path, sweep):
    paths = [sweep["folder"], *sweep["zips"], *sweep["ecb"]]
    report, events = ingest_both_ways(tmp_path, paths, attrs={"condition": "sweep-1"})
    assert len(report) == 3 + 1 + len(sweep["ecb"]) and len(events) > 5000
    assert sum(r[3] for r in report) == len(events) and all(r[2] > 0 for r in report)


def test_a_repeat_through_the_workers_adds_nothing(tmp_path, sweep):
    wh = tw.open(tmp_path / "wh")
    wh.ingest(sweep["zips"], workers=2)
    before = wh.sql("select count(*) from events").fetchall()
    again = wh.ingest(sweep["zips"], workers=2)
    assert [s.commit.already_ingested for s in again.sources] == [True] * 3
    assert wh.sql("select count(*) from events").fetchall() == before


def _break_line(trace: Path, line: int, text: str) -> None:
    lines = trace.read_text().splitlines(keepends=True)
    lines[line - 1] = text + "\n"
    trace.write_text("".join(lines))


def _trace(run: Path) -> Path:
    return sorted((run / "traces").rglob("*.jsonl"))[0]


def test_the_first_bad_record_in_reading_order_is_refused(tmp_path, sweep):
    """Two runs of a folder broken: the earlier one is named, as when one process reads them in
    order; the source before the folder commits, the one after it does not."""
    folder = tmp_path / "decisionbench"
    shutil.copytree(sweep["folder"], folder)
    runs = sorted(p for p in folder.iterdir() if p.is_dir())
    _break_line(_trace(runs[2]), 2, '{"type": "completion", "step": "two"}')
    _break_line(_trace(runs[4]), 1, "not json")
    (outcome, events) = ingest_both_ways(tmp_path, [sweep["zips"][0], folder, sweep["zips"][1]])
    assert outcome.startswith("BadInputError: ") and runs[2].name in outcome and "field 'step'" in outcome
    assert {e[2] for e in events} == {sweep["zips"][0].stem}  # run_id: the first zip's run alone


def test_the_gate_reads_the_parts_in_reading_order(tmp_path, sweep):
    """Negative latencies in two runs: the gate's report (counts, first examples) and the events
    it holds back are the same whichever process staged which run."""
    folder = tmp_path / "decisionbench"
    shutil.copytree(sweep["folder"], folder)
    runs = sorted(p for p in folder.iterdir() if p.is_dir())
    for run in (runs[1], runs[3]):
        trace = _trace(run)
        trace.write_text(trace.read_text().replace('"latency_s": ', '"latency_s": -', 1))
    refused, _ = ingest_both_ways(tmp_path / "refused", [folder])
    assert refused.startswith("QualityError: ") and "latency_s" in refused
    held, _ = ingest_both_ways(tmp_path / "held", [folder], quarantine=True)
    assert held[0][3] > 0
    quarantined = [sorted(map(str, tw.open(tmp_path / "held" / f"workers-{n}").quarantine()
                              .drop_columns(["quarantined_at"]).to_pylist())) for n in (1, 2)]
    assert quarantined[0] == quarantined[1] and len(quarantined[0]) == 2


def test_the_command_line_takes_workers(tmp_path, sweep):
    tracewh("ingest", "--workers", "2", *sweep["zips"], "-w", tmp_path / "wh", check=True)
    assert tw.open(tmp_path / "wh").sql("select count(distinct batch_id) from events").fetchall() == [(3,)]
    assert tracewh("ingest", "--workers", "0", sweep["zips"][0], "-w", tmp_path / "wh").code == 2


def test_small_ingests_stay_in_this_process(sweep):
    (source,) = expand([sweep["zips"][0]])
    assert not StagingPool(1).takes(source, [_Sized(POOL_MIN_BYTES)] * 2)
    assert StagingPool(2).takes(source, [_Sized(1)]), "asked for, workers stage even a small source"
    automatic = StagingPool()
    if automatic.processes > 1:
        assert not automatic.takes(source, [_Sized(POOL_MIN_BYTES // 4)] * 2)  # half the bytes read so far
        assert automatic.takes(source, [_Sized(POOL_MIN_BYTES // 4)] * 2)  # now all of them
        assert not StagingPool().takes(source, [_Sized(POOL_MIN_BYTES)]), "one group, nothing to share"
        assert StagingPool(several_sources=True).takes(source, [_Sized(POOL_MIN_BYTES)])


def test_an_ingest_through_the_workers_imports_neither_pandas_nor_protobuf(tmp_path, sweep):
    """pyarrow would import pandas (0.26 s) at the first conversion, in the main process and in
    every worker; the OTLP adapter needs protobuf (30 ms) only for OTLP files. -X importtime is
    inherited by the forks and lists what any of them imports."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "tracewh", "ingest", "--workers", "2",
                          *map(str, sweep["zips"]), "-w", str(tmp_path / "wh")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "pyarrow.lib" in run.stderr and "pandas.core" not in run.stderr and "google.protobuf" not in run.stderr
    assert tw.open(tmp_path / "wh").sql("select count(distinct batch_id) from events").fetchall() == [(3,)]


def test_pyarrow_knows_pandas_again_once_it_is_asked_for():
    code = """if True:
        import sys
        import pyarrow as pa
        from tracewh.ingest.stage import arrow_without_pandas
        arrow_without_pandas()
        assert pa.array([1, None]).to_pylist() == [1, None] and "pandas" not in sys.modules
        assert pa.table({"a": [1]}).to_pandas()["a"].tolist() == [1]  # imports pandas now
        import pandas as pd
        assert pa.array(pd.Series(pd.Categorical(["x", "y"]))).type.index_type == pa.int8()
        """
    subprocess.run([sys.executable, "-c", code], check=True)


class _Sized:
    """A group of one file of `size` bytes, as takes() weighs groups."""

    def __init__(self, size: int):
        self.files = [type("File", (), {"plain_bytes": size, "stored_bytes": size})()]


# ------------------------------------------------------------------------- one large native file
@pytest.fixture(scope="module")
def native_export(tmp_path_factory, sweep) -> Path:
    """The sweep's DecisionBench folder as native event lines, some lines without `seq` (it
    defaults to the line number), blank lines (they shift the numbers after them), a torn last line."""
    tmp = tmp_path_factory.mktemp("native")
    tw.open(tmp / "wh").ingest([sweep["folder"]], check=False)
    tw.open(tmp / "wh").export_events(tmp / "export.jsonl")
    lines = (tmp / "export.jsonl").read_bytes().split(b"\n")
    for i in range(100, len(lines) - 1, 997):
        lines[i] = re.sub(rb'"seq":[0-9]+,', b"", lines[i])
    lines[len(lines) // 2:len(lines) // 2] = [b"", b""]
    (tmp / "export.jsonl").write_bytes(b"\n".join(lines) + b'{"event_id": "cut sh')
    return tmp / "export.jsonl"


def test_a_large_native_file_is_read_in_ranges_that_store_what_one_reading_stores(tmp_path, native_export,
                                                                                 monkeypatch):
    whole = tmp_path / "whole"
    tw.open(whole).ingest([native_export], workers=1, check=False)  # seq left out breaks the gate's seq order
    monkeypatch.setattr(ranges, "RANGE_BYTES", 200_000)  # read here, where discovery cuts the file
    (source,) = expand([native_export])
    assert len(ranges.split(Group("native", source.files))) > 8
    _, events = ingest_both_ways(tmp_path, [native_export], check=False)
    assert events == stored(whole) and len(events) > 5000


def test_a_bad_line_in_a_later_range_is_named_by_its_line_in_the_file(tmp_path, native_export, monkeypatch):
    broken = tmp_path / "broken.jsonl"
    lines = native_export.read_bytes().split(b"\n")
    lines[-300] = lines[-300].replace(b'"kind":"', b'"kind":"not-', 1)
    broken.write_bytes(b"\n".join(lines))
    monkeypatch.setattr(ranges, "RANGE_BYTES", 200_000)
    outcome, events = ingest_both_ways(tmp_path, [broken], check=False)
    assert f"line {len(lines) - 299}" in outcome and "field 'kind'" in outcome and events == []


def test_ranges_start_after_a_line_end_and_know_their_line(tmp_path, monkeypatch):
    monkeypatch.setattr(ranges, "RANGE_BYTES", 1000)
    data = b"".join(b"x" * (i * 37 % 900) + b"\n" for i in range(400)) + b"y" * 5000  # long lines, a last one unended
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    (source,) = expand([path])
    parts = ranges.split(Group("native", source.files))
    assert len(parts) > 10
    read = b""
    for part in parts:
        (file,) = part.files
        with file.open() as stream:
            text = stream.read()
        assert data.count(b"\n", 0, len(read)) + 1 == file.first_line and (not read or read.endswith(b"\n"))
        read += text
    assert read == data
