"""The compiled gate (ingest/quality/compiled.py) against great-expectations (gate.py) over the same
staged batches: the same verdicts, counts, examples and failing events, clean and fuzzed."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracewh.ingest.quality import compiled, gate
from tracewh.ingest.quality.compiled import UnsupportedRule, unexpected_sql
from tracewh.ingest.quality.rules import CHECK_COLUMNS_SQL, KNOWN_FINISH_REASONS, Rule
from tracewh.ingest.rows import Where, convert
from tracewh.schema import ARROW_SCHEMA, KIND_NAMES
from tracewh.warehouse.batchdb import batch_connection

NULLABLE = pa.schema([f.with_nullable(True) for f in ARROW_SCHEMA])
T0 = datetime(2026, 5, 1, 10, tzinfo=timezone.utc)


def clean_events() -> list[dict[str, Any]]:
    """Events of every kind the suites look at, as adapters hand them to the pipeline, all passing."""
    run = {"run_id": "r1", "benchmark": "custom", "batch_id": "b1"}
    events = [
        {"kind": "run_attrs", "seq": 0, "payload": {"condition": "blind"}},
        {"kind": "llm_call", "seq": 1, "ts": T0, "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.01,
         "latency_s": 1.5, "finish_reason": "stop", "payload": {"provider": "openai"}},
        {"kind": "tool_call", "seq": 2, "tool_name": "search", "latency_s": 0.2},
        {"kind": "tool_result", "seq": 3, "latency_s": 0.1},
        {"kind": "delegation", "seq": 4, "cost_usd": 0.0, "latency_s": 3.0},
        {"kind": "task_finished", "seq": 5, "cost_usd": 0.2},
        {"kind": "score", "seq": 6, "score": 1.0},
        {"kind": "judgment", "seq": 7, "score": 0.0},
    ]
    rows = [dict(run, event_id=f"e{i}", source=f"run.jsonl:{i + 1}", **e) for i, e in enumerate(events)]
    d52 = {"run_id": "d", "benchmark": "delegate52", "batch_id": "b1", "source": "relay.jsonl:1"}
    rows += [dict(d52, event_id="d1", kind="llm_call", seq=20000, payload={"harness": "relay", "direction": "backward"}),
             dict(d52, event_id="d2", kind="score", seq=29999, score=0.5),
             {"run_id": "e", "benchmark": "entcollabbench", "batch_id": "b1", "source": "result.jsonl:1",
              "event_id": "j1", "kind": "judgment", "seq": 1, "score": 1.0, "payload": {"votes": []}}]
    return [convert(e, Where("test", i)) for i, e in enumerate(rows)]


# Each fuzz step breaks (or may break) one thing a rule checks, on a chosen row.
NUMBERS = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens")
FLOATS = ("cost_usd", "latency_s", "score")
PAYLOADS = ('{"harness": "relay", "direction": "backward"}', '{"votes": null}', '{"votes": [1]}', "[1, 2]", '"text"',
            "{}", None)
STEPS = st.one_of(
    st.tuples(st.sampled_from(["event_id", "run_id", "benchmark", "seq", "kind", "tool_name", "score", "source"]),
              st.none()),
    st.tuples(st.sampled_from(NUMBERS), st.integers(-3, 3)),
    st.tuples(st.sampled_from(FLOATS), st.floats(-1.5, 1.5, allow_nan=False)),
    st.tuples(st.just("kind"), st.sampled_from(sorted(KIND_NAMES) + ["bogus"])),
    st.tuples(st.just("benchmark"), st.sampled_from(["custom", "delegate52", "entcollabbench", "inspect"])),
    st.tuples(st.just("finish_reason"), st.sampled_from([*KNOWN_FINISH_REASONS[:3], "sleepy", None])),
    st.tuples(st.just("event_id"), st.sampled_from(["e1", "e2", "d1"])),  # repeats an id
    st.tuples(st.just("seq"), st.integers(-2, 30_000)),
    st.tuples(st.just("run_id"), st.sampled_from(["r1", "d", "e", "r2"])),
    st.tuples(st.just("source"), st.sampled_from(["run.jsonl:1", "other.jsonl:9", "no line", "a:b:7", "x\ny:3"])),
    st.tuples(st.just("ts"), st.sampled_from([T0 - timedelta(days=20000), T0, T0 + timedelta(days=4000), None])),
    st.tuples(st.just("payload"), st.sampled_from(PAYLOADS)),
)


def write_batch(folder: Path, rows: list[dict[str, Any]]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=NULLABLE), folder / "part-0.parquet")
    return f"select *, file_row_number as row_number from read_parquet('{folder}/part-0.parquet', file_row_number = true)"


def normalised(report: Any) -> dict[str, Any]:
    """What must agree: verdict, rows, each failure's count and examples, the events quarantine would hold."""
    failures = {(f.suite, f.rule.name): (f.count, [{k: _plain(v) for k, v in e.items()} for e in f.examples])
                for f in report.failures}
    held = {_plain(event_id): reasons for event_id, reasons in report.reasons_by_event().items()}
    return {"failed": report.failed, "rows": report.rows, "failures": failures, "held": held}


def _plain(value: Any) -> Any:
    """GX hands values over through pandas: nulls as NaN, integers of a column with nulls as floats."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def both(folder: Path, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    batch_sql = write_batch(folder, rows)
    return (normalised(gate.check_relation(batch_connection(folder), batch_sql)),
            normalised(compiled.check_relation(batch_connection(folder), batch_sql)))


def test_a_clean_batch_passes_both(tmp_path):
    reference, mine = both(tmp_path, clean_events())
    assert reference == mine and not mine["failed"] and mine["failures"] == {}


def test_every_rule_failing_at_once_agrees(tmp_path):
    rows = clean_events()
    for row in rows:
        row.update(prompt_tokens=-1, cost_usd=-1.0, latency_s=-1.0, finish_reason="sleepy", seq=1, event_id="same",
                   ts=T0 - timedelta(days=20000), score=2.0, payload='{"votes": null}', tool_name=None)
    rows[0].update(run_id=None, benchmark=None, kind="bogus")
    reference, mine = both(tmp_path, rows)
    assert mine["failed"] and len(mine["failures"]) >= 10
    assert reference == mine


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 10), STEPS), max_size=8), extra=st.integers(0, 3))
def test_fuzzed_batches_agree(tmp_path_factory, steps, extra):
    reference, mine = both(tmp_path_factory.mktemp("batch"), fuzzed_events(steps, extra))
    assert reference == mine


def fuzzed_events(steps: list[tuple[int, tuple[str, Any]]], extra: int) -> list[dict[str, Any]]:
    """The clean events, `extra` more of them, then each step's value set on its row."""
    rows = clean_events()
    rows += [dict(rows[i], event_id=f"x{i}", source=f"more.jsonl:{i}") for i in range(extra)]
    for index, (column, value) in steps:
        rows[index % len(rows)][column] = value
    return rows


@pytest.mark.parametrize("rule, sql", [
    (Rule("ExpectColumnValuesToNotBeNull", "x"), '"x" is null'),
    (Rule("ExpectColumnValuesToBeBetween", "x", {"min_value": 0}), '"x" is not null and not ("x" >= 0)'),
    (Rule("ExpectColumnValuesToBeBetween", "x", {"min_value": 0, "max_value": 1.5, "strict_max": True}),
     '"x" is not null and not ("x" >= 0 and "x" < 1.5)'),
    (Rule("ExpectColumnValuesToBeInSet", "x", {"value_set": ["a", "it's"]}), "\"x\" is not null and \"x\" not in ('a', 'it''s')"),
    (Rule("ExpectColumnValuesToBeInSet", "flag", {"value_set": [True]}), '"flag" is not null and "flag" not in (true)'),
])
def test_rules_compile_from_their_expectation_and_arguments(rule, sql):
    assert unexpected_sql(rule) == sql


@pytest.mark.parametrize("rule", [Rule("ExpectColumnValuesToMatchRegex", "x", {"regex": "a"}),
                                  Rule("ExpectColumnValuesToBeBetween", "x", {"min_value": 0, "mostly": 0.9}),
                                  Rule("ExpectColumnValuesToBeBetween", "x")])
def test_a_rule_without_a_sql_form_is_refused_not_skipped(rule):
    with pytest.raises(UnsupportedRule):
        unexpected_sql(rule)


# The batch-level facts as first written: a window over the whole frame each. The frame finds the
# rows that break them instead (less memory, no spilling); both must mark the same rows.
WINDOW_FACTS = """
    select row_number,
           count(*) over (partition by event_id) = 1 as event_id_unique,
           coalesce(kind = 'run_attrs' or seq > lag(seq) over (
               partition by source_file, run_id, kind = 'run_attrs' order by row_number), true) as seq_in_order
    from (select *, case when source is null then null
                         when regexp_matches(source, '^.*:\\d+$') then regexp_replace(source, ':\\d+$', '')
                         else '' end as source_file from batch)
    order by row_number"""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 10), STEPS), max_size=10), extra=st.integers(0, 3))
def test_the_batch_level_facts_are_the_windows_they_stand_for(tmp_path_factory, steps, extra):
    _facts_agree(tmp_path_factory.mktemp("batch"), fuzzed_events(steps, extra))


@pytest.mark.parametrize("null_ids", [1, 2])
def test_null_ids_count_as_a_window_counts_them(tmp_path, null_ids):
    rows = clean_events()
    for row in rows[1:1 + null_ids]:
        row["event_id"] = None
    assert _facts_agree(tmp_path, rows)[1][1] is (null_ids == 1)


def _facts_agree(folder: Path, rows: list[dict[str, Any]]) -> list[tuple]:
    con = batch_connection(folder)
    con.execute(f"create temp view batch as {write_batch(folder, rows)}")
    frame = con.sql(f"select row_number, event_id_unique, seq_in_order from ({CHECK_COLUMNS_SQL}) order by row_number")
    facts = frame.fetchall()
    assert facts == con.sql(WINDOW_FACTS).fetchall()
    return facts
