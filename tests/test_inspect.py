"""Inspect AI eval logs (.eval and .json) through the real CLI, checked against Inspect's own reader.

The logs are real: tests/inspect_logs.py runs small evals with inspect_ai's mock model and
writes each in both formats (docs/formats/inspect.md §1-§10 describe them, §11 the mapping).
Every number a view gives is compared with what inspect_ai computes from the same file:
read_eval_log for samples, events and results, samples_df / evals_df for the data frames.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, store_version, tracewh, write_zip
from inspect_logs import log_file_name, write_logs

import tracewh as tw

if sys.version_info >= (3, 14):
    import zipfile as zstd_zipfile
else:
    from backports.zstd import zipfile as zstd_zipfile

LOG_NAMES = ("agentic", "error", "cancelled", "started")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inspect") / "logs"
    write_logs(folder)
    return folder


@pytest.fixture(scope="module")
def store(logs, tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("inspect-wh") / "wh"
    tracewh("ingest", logs, "-w", wh, check=True)
    return wh


def log_path(logs: Path, name: str, fmt: str) -> Path:
    return logs / log_file_name(name, fmt)


def every_log(logs: Path) -> list[Path]:
    return [log_path(logs, name, fmt) for name in LOG_NAMES for fmt in ("eval", "json")]


def rows(wh: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    rel = tw.open(wh).sql(sql, list(params) or None)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def read(path: Path):
    from inspect_ai.log import read_eval_log

    return read_eval_log(str(path))


def run_id(log) -> str:
    return f"inspect:{log.eval.eval_id}"


def to_float(value: Any) -> float | None:
    """Inspect's value_to_float, NaN as None (the view's NULL)."""
    from inspect_ai.scorer import value_to_float

    number = value_to_float()(value)
    return None if math.isnan(number) else number


# -- what Inspect's reader says, per sample ------------------------------------------------

def inspect_samples(log) -> dict[tuple[str, int], dict[str, Any]]:
    """inspect_samples' columns as Inspect's reader gives them: the final attempt's events."""
    found = {}
    for s in log.samples:
        usage = [e.output.usage for e in s.events if e.event == "model" and e.output and e.output.usage]
        found[(str(s.id), s.epoch)] = {
            "llm_calls": sum(1 for e in s.events if e.event == "model"),
            "tool_calls": sum(1 for e in s.events if e.event == "tool"),
            # all input, as llm_calls.prompt_tokens: Inspect's input_tokens leave the cache out
            "prompt_tokens": sum(u.input_tokens + (u.input_tokens_cache_read or 0) + (u.input_tokens_cache_write or 0)
                                 for u in usage),
            "cached_tokens": sum(u.input_tokens_cache_read or 0 for u in usage),
            "output_tokens": sum(u.output_tokens for u in usage),
            "error": s.error.message if s.error else None,
        }
    return found


def view_samples(wh: Path, log) -> dict[tuple[str, int], dict[str, Any]]:
    got = rows(wh, "select * from inspect_samples where run_id = $1", run_id(log))
    keys = ("llm_calls", "tool_calls", "prompt_tokens", "cached_tokens", "output_tokens", "error")
    return {(r["sample_id"], r["epoch"]): {k: r[k] for k in keys} for r in got}


def test_samples_match_inspect(logs, store):
    for path in every_log(logs):
        log = read(path)
        expected, got = inspect_samples(log), view_samples(store, log)
        assert expected, path.name
        if log.status == "started":  # its finished copy (cancelled) is the same run, with more samples
            assert {k: got[k] for k in expected} == expected, path.name
        else:
            assert got == expected, path.name
        # the tokens are also what Inspect's per-sample usage says (grader calls included)
        for s in log.samples:
            usage = s.model_usage.values()
            assert got[(str(s.id), s.epoch)]["output_tokens"] == sum(u.output_tokens for u in usage)
    agentic = view_samples(store, read(log_path(logs, "agentic", "eval")))
    assert len(agentic) == 8 and agentic[("1", 1)] == {"llm_calls": 5, "tool_calls": 4, "prompt_tokens": 830,
                                                      "cached_tokens": 120, "output_tokens": 57, "error": None}
    assert agentic[("3", 2)]["error"] == "ZeroDivisionError('float division by zero')"


def test_samples_match_samples_df(logs, store):
    from inspect_ai.analysis import samples_df

    for fmt in ("eval", "json"):
        path = log_path(logs, "agentic", fmt)
        frame = samples_df(str(path))
        got = view_samples(store, read(path))
        assert sorted(got) == sorted(zip(frame["id"], frame["epoch"]))  # samples_df casts ids to text too
        errors = {(i, e): (m if isinstance(m, str) and m else None)  # "" when none
                  for i, e, m in zip(frame["id"], frame["epoch"], frame["error"])}
        assert {k: v["error"] for k, v in got.items()} == errors


# -- scores and metrics ------------------------------------------------------------------

def inspect_scores(log) -> dict[tuple[str, int, str], tuple[float | None, str | None]]:
    found = {}
    for s in log.samples:
        for name, score in (s.scores or {}).items():
            values = score.value.items() if isinstance(score.value, dict) else [(None, score.value)]
            for key, value in values:
                answer = None if key is not None else score.answer
                found[(str(s.id), s.epoch, name if key is None else f"{name}/{key}")] = (to_float(value), answer)
    return found


def test_scores_match_inspect(logs, store):
    for path in every_log(logs):
        log = read(path)
        got = {(r["sample_id"], r["epoch"], r["scorer"]): (r["value"], r["answer"])
               for r in rows(store, "select * from inspect_scores where run_id = $1", run_id(log))}
        expected = inspect_scores(log)
        assert (expected.items() <= got.items()) if log.status == "started" else (got == expected), path.name
    agentic = read(log_path(logs, "agentic", "json"))
    values = inspect_scores(agentic)
    assert values[("flaky", 1, "turns")] == (None, None)  # Score.unscored(): NaN
    assert values[("1", 1, "turns")][0] == 6.0 and values[("1", 1, "tool_profile/tool_calls")][0] == 3.0


def test_mean_per_scorer_matches_samples_df(logs, store):
    from inspect_ai.analysis import samples_df

    for fmt in ("eval", "json"):
        path = log_path(logs, "agentic", fmt)
        frame = samples_df(str(path))
        means = {r["scorer"]: r["mean"] for r in rows(
            store, "select scorer, avg(value) as mean from inspect_scores where run_id = $1 group by 1",
            run_id(read(path)))}
        for scorer in ("includes", "letter", "match", "model_graded_qa", "turns"):
            values = [to_float(v) for v in frame[f"score_{scorer}"] if isinstance(v, (str, int, float))]
            values = [v for v in values if v is not None]
            assert means[scorer] == pytest.approx(sum(values) / len(values)), scorer
        assert means["turns"] == 6.0 and means["match"] == pytest.approx(5 / 6)


def test_metrics_match_inspect(logs, store):
    from inspect_ai.analysis import evals_df

    for path in every_log(logs):
        log = read(path)
        expected = {}
        for es in log.results.scores if log.results else []:
            scorer = es.name if es.name == es.scorer else f"{es.scorer}/{es.name}"
            expected |= {(scorer, key): m.value for key, m in es.metrics.items()}
        got = {(r["scorer"], r["metric"]): r["value"]
               for r in rows(store, "select * from inspect_metrics where run_id = $1", run_id(log))}
        if log.status == "started":  # reports none; its finished copy's metrics are the run's
            assert not expected
            continue
        assert got == pytest.approx(expected), path.name
    frame = evals_df(str(log_path(logs, "agentic", "eval")))
    assert frame["score_match_accuracy"][0] == pytest.approx(5 / 6)
    assert frame["score_tool_calls_mean"][0] == pytest.approx(4 / 3) and frame["score_turns_mean"][0] == 6.0


# -- the generic views ---------------------------------------------------------------------

def all_events(log) -> list:
    """Every event Inspect kept: the final attempts' and what retried attempts left."""
    return [e for s in log.samples for e in [*s.events, *(x for r in s.error_retries or [] for x in r.events)]]


def test_generic_views_fill(logs, store):
    for fmt in ("eval", "json"):
        log = read(log_path(logs, "agentic", fmt))
        events = all_events(log)
        [run] = rows(store, "select * from runs where run_id = $1", run_id(log))
        attrs = json.loads(run["attrs"])
        assert (run["model"], attrs["task"], attrs["status"], attrs["task_version"]) == \
               ("mockllm/model", "tracewh_agentic", "success", 2)
        assert run["n_llm_calls"] == sum(1 for e in events if e.event == "model") == 28
        assert run["n_tool_calls"] == sum(1 for e in events if e.event == "tool") == 22
        # every call Inspect made is kept here (each retried attempt's tail holds its one model
        # call), so the run's tokens are Inspect's eval-level usage, all attempts and roles
        usage = log.stats.model_usage.values()
        assert run["prompt_tokens"] == sum(u.input_tokens + (u.input_tokens_cache_read or 0) for u in usage) == 4260
        assert run["completion_tokens"] == sum(u.output_tokens for u in usage) == 318
        assert run["cached_tokens"] == sum(u.input_tokens_cache_read or 0 for u in usage) == 480
        tools = Counter(r["tool_name"] for r in rows(store, "select tool_name from tool_calls where run_id = $1", run_id(log)))
        assert tools == Counter(e.function for e in events if e.event == "tool")
        spans = [e for s in log.samples for e in s.events if e.event == "span_begin"]
        handoffs = sum(1 for e in spans if e.type == "handoff")
        delegating = sum(1 for e in spans if e.type in ("agent", "handoff", "subtask"))
        assert run["n_delegations"] == delegating - handoffs == 18  # a handoff's agent span is its body
        # `scores` holds item scores only; the log's reported metrics (accuracy, stderr) are
        # inspect_metrics' rows, or `select avg(score) from scores` would average a stderr in
        scores = rows(store, "select count(*) as n from scores where run_id = $1", run_id(log))[0]["n"]
        assert scores == len(inspect_scores(log))
        metrics = rows(store, "select count(*) as n from inspect_metrics where run_id = $1", run_id(log))[0]["n"]
        assert metrics == sum(len(es.metrics) for es in log.results.scores) > 0
        assert rows(store, "select count(*) as n from scores where run_id = $1 and metric = 'stderr'",
                    run_id(log))[0]["n"] == 0


def test_handoff_nesting_and_tool_errors(logs, store):
    log = read(log_path(logs, "agentic", "eval"))
    [handoff] = rows(store, "select * from delegations where run_id = $1 and task_id = 'two' and subtask = 'epoch-1' "
                            "and to_agent = 'researcher'", run_id(log))
    [main] = rows(store, "select * from delegations where run_id = $1 and task_id = 'two' and subtask = 'epoch-1' "
                         "and depth = 1 and to_agent = 'react'", run_id(log))
    assert handoff["depth"] == 2 and handoff["parent_span_id"] == main["span_id"] and handoff["agent"] == "react"
    researcher = rows(store, "select * from llm_calls where run_id = $1 and task_id = 'two' and subtask = 'epoch-1' "
                             "and agent = 'researcher'", run_id(log))
    assert len(researcher) == 2 and {r["parent_span_id"] for r in researcher} == {handoff["span_id"]}
    errors = rows(store, "select tool_name, payload ->> '$.error.type' as type, payload ->> '$.failed' as failed "
                         "from tool_calls where run_id = $1 and payload ->> '$.status' = 'error' "
                         "and payload ->> '$.retry' is null order by all", run_id(log))
    expected = sorted((e.function, e.error.type if e.error else None, "true" if e.failed else None)
                      for s in log.samples for e in s.events if e.event == "tool" and (e.error or e.failed))
    assert [(r["tool_name"], r["type"], r["failed"]) for r in errors] == expected and len(expected) == 6


def test_store_changes_are_reported_once(logs, store):
    log = read(log_path(logs, "agentic", "json"))
    sample = next(s for s in log.samples if s.id == 1 and s.epoch == 1)
    reports = sum(1 for e in sample.events if e.event == "store" for c in e.changes if c.path == "/adds")
    got = rows(store, "select op, after_value from state_diffs where run_id = $1 and task_id = '1' and subtask = 'epoch-1' "
                      "and table_name = 'store' and row_key = '/adds'", run_id(log))
    assert reports == 4 and [(r["op"], json.loads(r["after_value"])) for r in got] == [("insert", 1)]
    keys = Counter(r["row_key"] for r in rows(store, "select row_key from state_diffs where run_id = $1 "
                                                     "and task_id = '1' and subtask = 'epoch-1' and table_name = 'store'",
                                               run_id(log)))
    # each key of the final store once, and the subtask's own (isolated) store's key, in its span
    assert keys == Counter([f"/{k}" for k in sample.store] + ["/normalised"])
    [subtask] = rows(store, "select span_id from delegations where run_id = $1 and task_id = '1' and subtask = 'epoch-1' "
                            "and to_agent = 'normalise'", run_id(log))
    assert rows(store, "select parent_span_id from state_diffs where run_id = $1 and task_id = '1' "
                       "and subtask = 'epoch-1' and row_key = '/normalised'", run_id(log)) == \
           [{"parent_span_id": subtask["span_id"]}]


def test_status_and_errors_of_unfinished_logs(logs, store):
    statuses = {}
    for path in every_log(logs):
        log = read(path)
        [run] = rows(store, "select attrs ->> '$.status' as status, attrs ->> '$.error' as error from runs "
                            "where run_id = $1", run_id(log))
        statuses[path.stem.rsplit("_", 1)[1], path.suffix] = run["status"]
        if log.status == "error":
            assert run["error"] == log.error.message
    # started and cancelled are copies of one eval: the finished log's status wins
    assert statuses == {(name, fmt): "cancelled" if name == "started" else
                        {"agentic": "success"}.get(name, name) for name, fmt in statuses}


# -- re-ingesting, refusing ------------------------------------------------------------------

def test_reingest_adds_nothing(logs, store, tmp_path):
    before = (store_version(store), rows(store, "select count(*) as n from events")[0]["n"])
    assert "already ingested" in tracewh("ingest", logs, "-w", store, check=True).out
    archive = write_zip(tmp_path / "logs.zip", {f"nested/{p.name}": p.read_bytes() for p in every_log(logs)})
    # one log alone, then all of them as .eval and .json inside a zip: two batches, nothing new
    again = tracewh("ingest", log_path(logs, "agentic", "eval"), archive, "-w", store, check=True)
    assert "inspect-eval" in again.out and "0 events added" in again.out
    assert (store_version(store), rows(store, "select count(*) as n from events")[0]["n"]) == before



def test_the_stored_logs_pass_tracewh_check(store):
    # seq follows each file: a log's metrics (its header, line 0) come before its samples, so the
    # store-wide check, which orders events by file and line, finds nothing out of order
    result = tracewh("check", "-w", store, "--format", "json")
    assert result.code == 0, result.out + result.err
    assert json.loads(result.out)["passed"] is True

def refused(wh: Path, path: Path, *words: str) -> str:
    before = store_version(wh)
    result = tracewh("ingest", path, "-w", wh)
    assert result.code == 2, result.err
    line = result.err.strip()
    assert "\n" not in line and str(path) in line and "Traceback" not in line, line
    assert all(w in line for w in words), line
    assert store_version(wh) == before
    return line


@pytest.fixture(scope="module")
def small_store(logs, tmp_path_factory) -> Path:
    """A store holding one log, for refusals to leave unchanged."""
    wh = tmp_path_factory.mktemp("inspect-small") / "wh"
    tracewh("ingest", log_path(logs, "error", "eval"), "-w", wh, "--no-check", check=True)
    return wh


def test_truncated_eval_is_refused(logs, small_store, tmp_path):
    src = log_path(logs, "agentic", "eval")
    data = src.read_bytes()
    with zstd_zipfile.ZipFile(src) as z:
        entries = z.infolist()
    sample = next(i for i in entries if i.filename == "samples/two_epoch_1.json")
    inside = sample.header_offset + 60 + sample.compress_size // 2
    for cut in (10, len(data) // 3, inside, len(data) - 300, len(data) - 10):
        cut_log = tmp_path / "cut.eval"
        cut_log.write_bytes(data[:cut])
        last = [i.filename for i in entries if i.header_offset + 30 < cut]  # the entry it ends in, or after
        line = refused(small_store, cut_log, "truncated", f"entry {last[-1]!r}" if last else "")
        if cut == inside:
            assert "ends inside entry 'samples/two_epoch_1.json'" in line


def test_corrupt_member_is_refused(logs, small_store, tmp_path):
    src = log_path(logs, "agentic", "eval")
    data = bytearray(src.read_bytes())
    with zstd_zipfile.ZipFile(src) as z:
        sample = z.getinfo("samples/two_epoch_1.json")
    data[sample.header_offset + 30 + len(sample.filename) + sample.compress_size // 2] ^= 0xFF
    flipped = tmp_path / "flipped.eval"
    flipped.write_bytes(bytes(data))
    refused(small_store, flipped, "flipped.eval!samples/two_epoch_1.json", "corrupt")


def test_truncated_json_is_refused(logs, small_store, tmp_path):
    text = log_path(logs, "agentic", "json").read_bytes()
    samples_at = text.index(b'"samples": [')
    for cut, where in ((30, "'status'"), (samples_at - 500, "'"), (samples_at + 5000, "item 0 of 'samples'"),
                       (len(text) - 200, "'reductions'"), (len(text) - 2, "")):
        cut_log = tmp_path / "cut.json"
        cut_log.write_bytes(text[:cut])
        refused(small_store, cut_log, "truncated", where)


def rewrite_eval(src: Path, dest: Path, change: dict[str, bytes | None], before: dict[str, bytes] | None = None) -> Path:
    """A copy of an .eval with members replaced (None: dropped), zstd-compressed as Inspect writes them;
    `before` adds members ahead of the first one (a name already there becomes a duplicate entry)."""
    with zstd_zipfile.ZipFile(src) as old, zstd_zipfile.ZipFile(dest, "w", zstd_zipfile.ZIP_ZSTANDARD) as new, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": wanted
        for name, data in (before or {}).items():
            new.writestr(name, data)
        for info in old.infolist():
            data = change.get(info.filename, old.read(info))
            if data is not None:
                new.writestr(info.filename, data)
    return dest


def test_unknown_version_is_refused(logs, small_store, tmp_path):
    src = log_path(logs, "agentic", "eval")
    with zstd_zipfile.ZipFile(src) as z:
        header = json.loads(z.read("header.json"))
    bad = rewrite_eval(src, tmp_path / "v3.eval", {"header.json": json.dumps(header | {"version": 3}).encode()})
    refused(small_store, bad, "v3.eval!header.json", "field 'version'", "version 3")
    text = json.loads(log_path(logs, "error", "json").read_text())
    bad_json = tmp_path / "v3.json"
    bad_json.write_text(json.dumps(text | {"version": 3}))
    refused(small_store, bad_json, "field 'version'", "version 3")


def test_missing_header_is_refused_unless_the_log_is_running(logs, small_store, tmp_path):
    src = log_path(logs, "agentic", "eval")
    damaged = rewrite_eval(src, tmp_path / "no-header.eval", {"header.json": None})
    refused(small_store, damaged, "header.json", "summaries.json")
    running = rewrite_eval(src, tmp_path / "running.eval", {"header.json": None, "summaries.json": None,
                                                           "reductions.json": None})
    wh = tmp_path / "wh"
    tracewh("ingest", running, "-w", wh, "--no-check", check=True)  # the gate passes these events in `store`
    [run] = rows(wh, "select attrs ->> '$.status' as status, n_tasks from runs")
    assert run == {"status": "started", "n_tasks": 4}
    assert rows(wh, "select count(*) as n from inspect_metrics") == [{"n": 0}]


def test_started_then_finished_adds_only_what_is_new(logs, tmp_path):
    wh = tmp_path / "wh"
    started, finished = read(log_path(logs, "started", "eval")), read(log_path(logs, "cancelled", "eval"))
    tracewh("ingest", log_path(logs, "started", "eval"), "-w", wh, "--no-check", check=True)
    first = rows(wh, "select * from inspect_samples")
    assert [(r["sample_id"], r["llm_calls"]) for r in first] == [("a", 1)] and len(started.samples) == 1
    assert rows(wh, "select attrs ->> '$.status' as s from runs") == [{"s": "started"}]
    tracewh("ingest", log_path(logs, "cancelled", "eval"), "-w", wh, "--no-check", check=True)
    assert view_samples(wh, finished) == inspect_samples(finished)
    assert rows(wh, "select attrs ->> '$.status' as s from runs") == [{"s": "cancelled"}]


def test_duplicate_members_last_wins_inside_a_zip(logs, tmp_path):
    src = log_path(logs, "agentic", "eval")
    with zstd_zipfile.ZipFile(src) as z:
        sample = json.loads(z.read("samples/1_epoch_1.json"))
    stale = json.dumps(sample | {"scores": {"match": {"value": "I", "answer": "stale"}}}).encode()
    relogged = rewrite_eval(src, tmp_path / "relogged.eval", {}, before={"samples/1_epoch_1.json": stale})
    wh = tmp_path / "wh"
    tracewh("ingest", write_zip(tmp_path / "outer.zip", {"runs/relogged.eval": relogged.read_bytes()}), "-w", wh,
            "--no-check", check=True)
    got = rows(wh, "select value, answer from inspect_scores where sample_id = '1' and epoch = 1 and scorer = 'match'")
    assert got == [{"value": 1.0, "answer": "5"}]
    assert view_samples(wh, read(src)) == inspect_samples(read(src))


def test_streams_logs_larger_than_the_record_limit(logs, tmp_path):
    """--max-line-mb 1 caps one sample; logs of several MB still ingest, a sample at a time."""
    wh, copies = tmp_path / "wh", 4
    log = json.loads(log_path(logs, "agentic", "json").read_text())
    log["samples"] = [s | {"id": f"{s['id']}-{k}"} for k in range(copies) for s in log["samples"]]
    big_json = tmp_path / "big.json"
    big_json.write_text(json.dumps(log, indent=2))
    src = log_path(logs, "agentic", "eval")
    with zstd_zipfile.ZipFile(src) as z:
        members = {n: json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/")}
    extra = {f"samples/{s['id']}-{k}_epoch_{s['epoch']}.json": json.dumps(s | {"id": f"{s['id']}-{k}"}).encode()
             for k in range(1, copies) for s in members.values()}
    big_eval = rewrite_eval(src, tmp_path / "big.eval", {}, before=extra)
    assert big_json.stat().st_size > 2 << 20 and sum(len(v) for v in extra.values()) > 1 << 20
    tracewh("ingest", big_json, big_eval, "-w", wh, "--max-line-mb", "1", "--no-check", check=True)
    counts = rows(wh, "select run_id, count(*) as n from inspect_samples group by 1 order by 2")
    assert [r["n"] for r in counts] == [8 * copies, 8 * copies]


def test_third_party_logs(tmp_path):
    """Real logs from Inspect's own repository: an older, deflated .eval and a .json."""
    folder = DATA / "inspect"
    for name in ("popularity.eval", "log_tool_call_error.json"):
        if not (folder / name).exists():
            pytest.fail(f"{folder / name} is missing: see tests/data/README.md")
    with zstd_zipfile.ZipFile(folder / "popularity.eval") as z:
        assert {i.compress_type for i in z.infolist()} == {zstd_zipfile.ZIP_DEFLATED}
    wh = tmp_path / "wh"
    tracewh("ingest", folder, "-w", wh, check=True)
    popularity, tool_errors = read(folder / "popularity.eval"), read(folder / "log_tool_call_error.json")
    for log in (popularity, tool_errors):
        key = log.eval.task_id  # neither has an eval_id: the run id comes from the fields that predate it
        [run] = rows(wh, "select run_id, attrs ->> '$.status' as status from runs where attrs ->> '$.inspect_task_id' = $1",
                     key)
        assert run["status"] == log.status == "success"
        got = rows(wh, "select * from inspect_samples where run_id = $1", run["run_id"])
        assert {(r["sample_id"], r["epoch"]) for r in got} == {(str(s.id), s.epoch) for s in log.samples}
        metrics = {(r["scorer"], r["metric"]): r["value"]
                   for r in rows(wh, "select * from inspect_metrics where run_id = $1", run["run_id"])}
        assert metrics == pytest.approx({(es.name, k): m.value for es in log.results.scores for k, m in es.metrics.items()})
    [pop_run] = rows(wh, "select * from runs where model = 'openai/gpt-4o-mini'")
    usage = popularity.stats.model_usage["openai/gpt-4o-mini"]
    assert (pop_run["n_llm_calls"], pop_run["prompt_tokens"], pop_run["completion_tokens"]) == \
           (10, usage.input_tokens, usage.output_tokens) == (10, 620, 20)
    values = rows(wh, "select avg(value) as mean from inspect_scores where task = 'popularity'")
    assert values == [{"mean": pytest.approx(0.8)}]


def test_version_1_shapes_are_migrated_as_inspect_does(logs, tmp_path):
    """Log version 1: a sample's one `score` (the first scorer's) and `transcript {events, content}`."""
    log = json.loads(log_path(logs, "error", "json").read_text())
    log = log | {"version": 1, "eval": log["eval"] | {"scorers": [{"name": "exact"}]}}
    for sample in log["samples"]:
        sample["transcript"] = {"events": sample.pop("events"), "content": sample.pop("attachments", {})}
        sample.pop("scores", None)
        sample["score"] = {"value": "C" if sample["id"] == 1 else "I", "answer": str(sample["id"])}
    old = tmp_path / "v1.json"
    old.write_text(json.dumps(log))
    wh = tmp_path / "wh"
    tracewh("ingest", old, "-w", wh, "--no-check", check=True)
    assert rows(wh, "select sample_id, scorer, value from inspect_scores order by 1") == [
        {"sample_id": str(i), "scorer": "exact", "value": 1.0 if i == 1 else 0.0} for i in (1, 2, 3)]
    expected = inspect_samples(read(log_path(logs, "error", "json")))
    assert view_samples(wh, read(log_path(logs, "error", "json"))) == expected
