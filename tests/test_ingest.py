"""Ingesting native-format events: every input shape, typed columns, idempotency, attributes."""

from __future__ import annotations

import gzip
import json

import pytest
from helpers import llm_call, native_lines, plain, store_version, tracewh, write_native, write_zip

import tracewh as tw

EVENTS = [
    {"run_id": "r1", "benchmark": "custom", "kind": "run_started", "seq": 0, "ts": "2026-05-01T10:00:00Z"},
    llm_call("r1", 1, ts="2026-05-01T10:00:01.250Z", task_id="t1", model="gpt-5.4", prompt_tokens=1200,
             completion_tokens=300, reasoning_tokens=100, cached_tokens=200, cost_usd=0.0075, latency_s=2.5,
             finish_reason="tool_calls", span_id="a1", payload={"provider": "openai"}),
    {"run_id": "r1", "benchmark": "custom", "kind": "tool_call", "seq": 2, "task_id": "t1", "tool_name": "search",
     "parent_span_id": "a1", "payload": {"arguments": {"q": "tracewh"}, "server": "web"}},
    llm_call("r1", 3, ts=1777629605.0, task_id="t1", model="gpt-5.4", prompt_tokens=1600, completion_tokens=50,
             cost_usd=0.0045, latency_s=1.0, finish_reason="stop"),
    {"run_id": "r1", "benchmark": "custom", "kind": "score", "seq": 4, "task_id": "t1", "score": 1.0,
     "payload": {"metric": "success"}},
]


def test_ingest_a_jsonl_file_and_query_typed_columns(tmp_path, wh):
    source = write_native(tmp_path / "run.jsonl", EVENTS)
    result = tracewh("ingest", source, "-w", wh, check=True)
    assert "5 events added" in result.out

    calls = tw.open(wh).sql("select model, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens, "
                            "total_tokens, cost_usd, latency_s, finish_reason, provider, epoch_ms(ts) "
                            "from llm_calls order by seq").fetchall()
    assert calls == [
        ("gpt-5.4", 1200, 300, 100, 200, 1500, 0.0075, 2.5, "tool_calls", "openai", 1777629601250),
        ("gpt-5.4", 1600, 50, None, None, 1650, 0.0045, 1.0, "stop", None, 1777629605000),
    ]
    tools = tw.open(wh).sql("select tool_name, server, arguments ->> '$.q', parent_span_id from tool_calls").fetchall()
    assert tools == [("search", "web", "tracewh", "a1")]


def test_runs_view_totals_one_row_per_run(tmp_path, wh):
    tracewh("ingest", write_native(tmp_path / "run.jsonl", EVENTS), "-w", wh, check=True)
    row = tw.open(wh).sql("select run_id, model, n_events, n_tasks, n_llm_calls, n_tool_calls, prompt_tokens, "
                          "completion_tokens, total_tokens, round(cost_usd, 6), epoch(first_ts), epoch(last_ts) "
                          "from runs").fetchall()
    assert row == [("r1", "gpt-5.4", 5, 1, 2, 1, 2800, 350, 3150, 0.012, 1777629600.0, 1777629605.0)]


@pytest.mark.parametrize("shape", ["jsonl.gz", "zip", "directory", "zip of gz"])
def test_every_input_shape_gives_the_same_events(tmp_path, wh, shape):
    data = native_lines(EVENTS)
    if shape == "jsonl.gz":
        source = tmp_path / "run.jsonl.gz"
        source.write_bytes(gzip.compress(data))
    elif shape == "zip":
        source = write_zip(tmp_path / "run.zip", {"logs/run.jsonl": data, "README.md": b"not data"})
    elif shape == "zip of gz":
        source = write_zip(tmp_path / "run.zip", {"run.jsonl.gz": gzip.compress(data)})
    else:
        source = tmp_path / "runs"
        (source / "sub").mkdir(parents=True)
        (source / "sub" / "a.jsonl").write_bytes(data)
        (source / "LICENSE").write_text("MIT")
    tracewh("ingest", source, "-w", wh, check=True)
    assert tw.open(wh).sql("select count(*), sum(prompt_tokens) from events").fetchall() == [(5, 2800)]


def test_reingest_adds_nothing_and_says_so(tmp_path, wh):
    source = write_native(tmp_path / "run.jsonl", EVENTS)
    tracewh("ingest", source, "-w", wh, check=True)
    version = store_version(wh)

    again = tracewh("ingest", source, "-w", wh, check=True)
    assert "already ingested" in again.out and "0 events added" in again.out
    assert store_version(wh) == version


def test_same_events_in_another_archive_are_counted_as_duplicates(tmp_path, wh):
    with_ids = [dict(e, event_id=f"e{i}") for i, e in enumerate(EVENTS)]
    tracewh("ingest", write_native(tmp_path / "a.jsonl", with_ids), "-w", wh, check=True)
    extra = llm_call("r1", 9, prompt_tokens=7, event_id="e9")
    result = tracewh("ingest", write_zip(tmp_path / "b.zip", {"b.jsonl": native_lines(with_ids + [extra])}), "-w", wh,
                     check=True)
    assert "1 event added, 5 duplicate events" in result.out
    assert tw.open(wh).sql("select count(*) from events").fetchall() == [(6,)]


def test_event_ids_are_deterministic(tmp_path):
    source = write_native(tmp_path / "run.jsonl", EVENTS)
    ids = []
    for name in ("one", "two"):
        tracewh("ingest", source, "-w", tmp_path / name, check=True)
        ids.append(tw.open(tmp_path / name).sql("select list(event_id order by seq) from events").fetchall())
    assert ids[0] == ids[1]


def test_ids_of_many_lines_at_once_are_the_ids_one_at_a_time():
    from tracewh.schema import event_id, line_event_ids

    names, lines, subs = ["a.jsonl", "runs/é x/traces/t:1.jsonl", ""], [1, 22, 3_000_000_000], [0, 2, 0]
    assert line_event_ids("d" * 64, names, lines, subs) == [event_id("d" * 64, *at) for at in zip(names, lines, subs)]


def test_attr_fills_model_and_attaches_run_attributes(tmp_path, wh):
    no_model = [{k: v for k, v in e.items() if k != "model"} for e in EVENTS]
    source = write_native(tmp_path / "run.jsonl", no_model)
    tracewh("ingest", source, "-w", wh, "--attr", "model=claude-opus-4.6", "--attr", "condition=blind", check=True)
    wh_ = tw.open(wh)
    assert wh_.sql("select distinct model from llm_calls").fetchall() == [("claude-opus-4.6",)]
    model, attrs = wh_.sql("select model, attrs from runs").fetchall()[0]
    assert model == "claude-opus-4.6" and json.loads(attrs) == {"model": "claude-opus-4.6", "condition": "blind"}

    # The same file with a new attribute is a new batch: only the new run_attrs event lands,
    # and the later value wins in `runs`.
    result = tracewh("ingest", source, "-w", wh, "--attr", "condition=profiles", check=True)
    assert "1 event added" in result.out
    assert json.loads(tw.open(wh).sql("select attrs from runs").fetchall()[0][0])["condition"] == "profiles"


def test_a_correction_supersedes_the_event_it_names(tmp_path, wh):
    tracewh("ingest", write_native(tmp_path / "a.jsonl", [llm_call("r1", 1, event_id="x", cost_usd=9.0)]), "-w", wh,
            check=True)
    fix = llm_call("r1", 1, event_id="x-fixed", cost_usd=0.9, supersedes="x")
    tracewh("ingest", write_native(tmp_path / "fix.jsonl", [fix]), "-w", wh, check=True)
    assert tw.open(wh).sql("select event_id, cost_usd from llm_calls").fetchall() == [("x-fixed", 0.9)]
    assert tw.open(wh).sql("select count(*) from events_raw").fetchall() == [(2,)]  # nothing was mutated


def test_ingest_is_a_python_call_too(tmp_path, wh):
    report = tw.open(wh).ingest([write_native(tmp_path / "run.jsonl", EVENTS)])
    assert report.added == 5 and report.sources[0].adapters == ["native"]
    assert tw.open(wh).sql("select count(*) from events").pl().item() == 5
    assert tw.open(wh).sql("select kind from events").arrow().read_all().num_rows == 5


# -- what an ingest could not read (issue #32) ---------------------------------------------------

@pytest.mark.parametrize("files, says", [
    ({}, "an empty folder"),
    ({"a.csv": b"x,y\n", "notes.txt": b"hello", "b.csv": b"", "c.csv": b"", "d.md": b""},
     "5 skipped: {d}/a.csv, {d}/b.csv, {d}/c.csv and 2 more: not a file tracewh reads"),
])
def test_an_ingest_with_nothing_readable_says_what_it_skipped_and_fails(tmp_path, wh, files, says):
    folder = tmp_path / "runs"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    result = tracewh("ingest", folder, "-w", wh)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert f"{folder}: nothing to ingest, " in result.err and says.format(d=folder) in result.err
    assert not wh.exists()  # no store made for nothing


def test_files_skipped_beside_readable_ones_are_named(tmp_path, wh):
    write_native(tmp_path / "run.jsonl", EVENTS)
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "scores.csv").write_text("a,b\n")
    result = tracewh("ingest", tmp_path / "run.jsonl", tmp_path / "tables", "-w", wh, check=True)
    assert "5 events added" in result.out
    assert f"1 skipped: {tmp_path}/tables/scores.csv: not a file tracewh reads" in plain(result.err)


def test_a_symlink_loop_is_named_as_one(tmp_path, wh):
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    for target in (tmp_path / "a.jsonl", tmp_path):  # named, and met inside a folder
        result = tracewh("ingest", target, "-w", wh)
        assert result.code == 2 and "a symbolic link loop" in result.err and "FIFO" not in result.err, result.err


def test_an_unrecognised_file_gets_one_short_line(tmp_path, wh):
    (tmp_path / "odd.jsonl").write_text('{"hello": "world"}\n')
    result = tracewh("ingest", tmp_path / "odd.jsonl", "-w", wh)
    assert result.code == 2 and result.err.count("\n") == 1 and len(result.err) < 400, result.err
    assert "odd.jsonl, line 1: no adapter recognises this file (first record has keys ['hello'])" in result.err
    assert "tracewh ingest --help" in result.err
