"""The data-quality gate (great-expectations), quarantine, `tracewh check` and `tracewh doctor`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from helpers import llm_call, store_version, tracewh, write_native

import tracewh as tw

GOOD = [llm_call("r1", 1, prompt_tokens=10, finish_reason="stop"), llm_call("r1", 2, prompt_tokens=20)]


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    tracewh("ingest", write_native(tmp_path / "good.jsonl", GOOD), "-w", wh, check=True)
    return wh


def refused(tmp_path: Path, wh: Path, events: list[dict], *expected: str) -> None:
    before = store_version(wh)
    result = tracewh("ingest", write_native(tmp_path / "bad.jsonl", events), "-w", wh)
    message = " ".join(result.err.split())
    assert result.code == 2, result.err
    assert "refused by the data-quality gate; nothing was committed" in message
    for text in expected:
        assert text in message
    assert store_version(wh) == before


def test_negative_tokens_and_out_of_range_scores_refuse_the_batch(tmp_path, seeded):
    refused(tmp_path, seeded, [llm_call("r2", 1, prompt_tokens=-5),
                               {"run_id": "r2", "benchmark": "custom", "kind": "score", "seq": 2, "score": 1.5}],
            "llm_call: ExpectColumnValuesToBeBetween(prompt_tokens) failed for 1 events", "bad.jsonl:2",
            "score: ExpectColumnValuesToBeInSet(score_in_range) failed for 1 events", "bad.jsonl:3")


def test_ids_must_be_unique_within_a_batch(tmp_path, seeded):
    refused(tmp_path, seeded, [llm_call("r2", 1, event_id="same"), llm_call("r2", 2, event_id="same")],
            "ExpectColumnValuesToBeInSet(event_id_unique) failed for 2 events")


def test_seq_must_increase_within_a_run(tmp_path, seeded):
    refused(tmp_path, seeded, [llm_call("r2", 5), llm_call("r3", 1), llm_call("r2", 4)],
            "ExpectColumnValuesToBeInSet(seq_in_order) failed for 1 events", "bad.jsonl:4")


def test_implausible_times_are_refused(tmp_path, seeded):
    refused(tmp_path, seeded, [llm_call("r2", 1, ts="1970-01-02T00:00:00Z")], "ts_plausible")


def test_benchmark_rules(tmp_path, seeded):
    backward = {"run_id": "d", "benchmark": "delegate52", "kind": "llm_call", "seq": 20000,
                "payload": {"harness": "relay", "direction": "backward"}}
    refused(tmp_path, seeded, [backward], "d52_backward_scored", "a DELEGATE-52 backward step carries a score")
    judgment = {"run_id": "e", "benchmark": "entcollabbench", "kind": "judgment", "seq": 1, "score": 1.0,
                "payload": {"verdict": "pass"}}
    refused(tmp_path, seeded, [judgment], "ecb_votes_present")


def test_unknown_finish_reasons_are_flagged_not_refused(tmp_path, seeded):
    result = tracewh("ingest", write_native(tmp_path / "odd.jsonl", [llm_call("r2", 1, finish_reason="sleepy")]),
                     "-w", seeded, check=True)
    assert "[warn] llm_call: ExpectColumnValuesToBeInSet(finish_reason)" in " ".join(result.err.split())
    assert tw.open(seeded).sql("select finish_reason from llm_calls where run_id = 'r2'").fetchall() == [("sleepy",)]


def test_quarantine_holds_failing_events_and_commits_the_rest(tmp_path, seeded):
    events = [llm_call("r2", 1, prompt_tokens=7), llm_call("r2", 2, prompt_tokens=-1), llm_call("r2", 3, cost_usd=-2.0)]
    source = write_native(tmp_path / "mixed.jsonl", events)
    result = tracewh("ingest", source, "-w", seeded, "--quarantine", check=True)
    assert "1 event added" in result.out and "2 events quarantined" in result.out
    assert tw.open(seeded).sql("select seq from llm_calls where run_id = 'r2'").fetchall() == [(1,)]

    listed = pl.read_csv(tracewh("quarantine", "-w", seeded, "-f", "csv", check=True).out.encode())
    assert sorted(listed["source"]) == ["mixed.jsonl:3", "mixed.jsonl:4"]
    assert any("prompt_tokens" in r for r in listed["reasons"]) and any("cost_usd" in r for r in listed["reasons"])

    out = tmp_path / "held.parquet"
    tracewh("quarantine", "-w", seeded, "--out", out, check=True)
    held = pl.read_parquet(out)
    assert held.height == 2 and {"event_id", "payload", "reasons", "suites_version"} <= set(held.columns)

    again = tracewh("ingest", source, "-w", seeded, "--quarantine", check=True)
    assert "already ingested" in again.out
    assert tw.open(seeded).sql("select count(*) from llm_calls where run_id = 'r2'").fetchall() == [(1,)]


def test_check_reports_a_clean_store(seeded):
    result = tracewh("check", "-w", seeded, "-f", "json", check=True)
    report = json.loads(result.out)
    assert report["passed"] is True and report["rows"] == 2 and report["unreadable_files"] == []


@pytest.mark.parametrize("damage", ["truncated", "footer overwritten"])
def test_check_names_a_corrupted_parquet_file(seeded, damage):
    victim = Path(tw.open(seeded).store.files()[0])
    data = bytearray(victim.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[-40:-8] = b"\xff" * 32
    victim.write_bytes(bytes(data))
    result = tracewh("check", "-w", seeded)
    assert result.code == 1 and "unreadable" in result.out and victim.name in "".join(result.out.split())


def test_doctor_removes_leftovers_of_interrupted_ingests(seeded):
    committed = Path(tw.open(seeded).store.files()[0])
    orphan = committed.with_name("part-00099-orphan.zstd.parquet")
    shutil.copy(committed, orphan)
    (seeded / "_staging" / "999999999-deadbeef").mkdir(parents=True)
    (seeded / "events" / "_delta_log" / "_commit_123.json.tmp").write_text("{}")
    result = tracewh("doctor", "-w", seeded, check=True)
    assert "uncommitted data files: 1 removed" in result.err and orphan.name in result.err
    assert "abandoned staging folders: 1 removed" in result.err and "unfinished commit files: 1 removed" in result.err
    assert not orphan.exists() and committed.exists()
    assert tw.open(seeded).sql("select count(*) from events").fetchall() == [(2,)]
    assert "0 removed" in tracewh("doctor", "-w", seeded, check=True).err


def test_queries_do_not_import_great_expectations(seeded):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "tracewh", "sql", "select count(*) from runs",
                           "-w", str(seeded)], capture_output=True, text=True)
    assert proc.returncode == 0 and "great_expectations" not in proc.stderr
    assert "great_expectations" in subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tracewh", "check", "-w", str(seeded)],
        capture_output=True, text=True).stderr


@pytest.mark.spark  # needs the spark extra (pyspark) installed, not Java: it runs with the Spark tests
def test_check_from_python_dash_c_runs_with_the_spark_extra_installed(seeded):
    """GX imports pyspark's Connect package, which ends the process with exit code 0 when grpc is
    missing and `__main__` has no file (`python -c`, a pytest-xdist worker): it takes the process
    for a doctest run. The caller's `check()` would return nothing, and the process say it succeeded."""
    import subprocess
    import sys

    pytest.importorskip("pyspark", reason="the spark extra is not installed (docs/scale-out.md)")
    code = f"import tracewh as tw; print('passed:', tw.open({str(seeded)!r}).check().passed)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "passed: True", proc.stderr[-2000:]
    assert "doctest" not in proc.stderr
