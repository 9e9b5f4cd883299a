"""The command line as a user meets it: demo, sql formats, views, schema, export round trip, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from helpers import tracewh

import tracewh as tw
from tracewh.queries.registry import load_views
from tracewh.schema import COLUMN_NAMES
from tracewh.schema.docs import schema_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The demo store, built once through `tracewh demo` with TRACEWH_HOME pointing at a temp dir."""
    home = tmp_path_factory.mktemp("home")
    result = tracewh("demo", "--tasks", "12", env=os.environ | {"TRACEWH_HOME": str(home)}, check=True)
    assert "Runs: success, calls, tokens and cost per model and condition" in result.out
    assert "claude-sonnet-4.6" in result.out and "Delegation flow" in result.out
    (home / "demo-stdout.txt").write_text(result.out)
    return home / "demo" / "warehouse"


def test_demo_twice_adds_nothing(demo):
    version = tw.open(demo).version
    result = tracewh("demo", "--tasks", "12", "-w", demo.parent, check=True)
    assert "12 batches already ingested" in result.out
    # The demo's small sources committed together: one version, each source a batch of its own
    assert tw.open(demo).version == version == 1 and len(tw.open(demo).log()) == 12


def test_demo_prints_the_entcollabbench_table1(demo):
    out = (demo.parent.parent / "demo-stdout.txt").read_text()
    assert "EntCollabBench pass rates (Table 1 shape, %)" in out
    assert tw.open(demo).sql("select count(distinct model), count(*) from ecb_table1").fetchall() == [(4, 4)]
    kinds = tw.open(demo).sql("select distinct kind from ecb_violations order by 1").fetchall()
    assert kinds == [("cycle",), ("depth",), ("permission",)]
    assert tw.open(demo).sql("select count(*) > 0 from ecb_pseudo_tool_calls, ecb_rereads").fetchall() == [(True,)]


def test_demo_prints_the_delegate52_table_in_paper_shape(demo):
    out = (demo.parent.parent / "demo-stdout.txt").read_text()
    table = out[out.index("DELEGATE-52 RS@k"):].splitlines()
    header = [cell.strip() for cell in table[2].strip("│ ").split("│")]
    assert header[0] == "model" and [int(h) for h in header[1:]] == list(range(2, 21, 2))
    rows = [line.strip("│ ").split("│") for line in table[4:8]]
    assert {r[0].strip() for r in rows} == {"gpt-4.1", "gpt-5.4", "claude-opus-4.6", "gemini-3.1-pro"}


def test_demo_has_one_delegation_level_with_linked_peer_calls(demo):
    rows = tw.open(demo).sql("""
        select count(*) filter (where c.model = d.to_model), count(*)
        from delegations d join llm_calls c on c.parent_span_id = d.span_id""").fetchall()
    matched, total = rows[0]
    assert total > 0 and matched == total


def test_sql_output_formats(demo):
    query = ("select model, count(*) as calls from llm_calls where agent = 'orchestrator' and benchmark = 'agentdemo' "
             "group by 1 order by 1")
    csv = tracewh("sql", query, "-w", demo, "-f", "csv", check=True).out
    frame = pl.read_csv(csv.encode())
    assert frame["model"].to_list() == ["claude-sonnet-4.6", "gemini-3-flash", "gpt-5.4"]

    lines = tracewh("sql", query, "-w", demo, "-f", "json", check=True).out.splitlines()
    assert [json.loads(line)["model"] for line in lines] == frame["model"].to_list()

    markdown = tracewh("sql", query, "-w", demo, "-f", "markdown", check=True).out.splitlines()
    assert markdown[0].replace(" ", "") == "|model|calls|" and set(markdown[1]) <= set("|-: ")

    table = tracewh("sql", query, "-w", demo, check=True).out
    assert "gemini-3-flash" in table and str(frame["calls"][1]) in table


def test_sql_reads_stdin_and_reports_errors(demo):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "tracewh", "sql", "-", "-w", str(demo), "-f", "csv"],
                          input="select count(*) as n from runs where benchmark = 'agentdemo'",
                          capture_output=True, text=True)
    assert proc.stdout == "n\n6\n"
    bad = tracewh("sql", "select nope from events", "-w", demo)
    assert bad.code == 2 and "Binder Error" in bad.err and "nope" in bad.err and "Traceback" not in bad.err


def test_views_lists_every_view_with_description_and_columns(demo):
    out = tracewh("views", "-w", demo, check=True).out
    for view in load_views():
        assert view.name in out and view.description.split()[0] in out
    for name in ("llm_calls", "tool_calls", "delegations", "scores", "state_diffs", "judgments", "runs"):
        assert name in out
    assert "prompt_tokens" in out and "to_model" in out


def test_typed_views_expose_contract_columns(demo):
    wh = tw.open(demo)
    columns = {v.name: [c for c, _ in v.columns] for v in wh.views()}
    assert columns["events"] == list(COLUMN_NAMES)
    for name in ("event_id", "run_id", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens",
                 "cost_usd", "latency_s", "finish_reason"):
        assert name in columns["llm_calls"]
    assert {"tool_name", "arguments"} <= set(columns["tool_calls"])
    assert {"score", "metric"} <= set(columns["scores"])
    assert {"run_id", "attrs", "n_events", "n_llm_calls", "total_tokens", "cost_usd", "first_ts", "last_ts"} <= set(
        columns["runs"])


def test_export_then_ingest_into_a_fresh_store_gives_identical_events(demo, tmp_path):
    out = tmp_path / "events.jsonl.gz"
    result = tracewh("export-events", out, "-w", demo, check=True)
    count = tw.open(demo).sql("select count(*) from events").fetchall()[0][0]
    assert f"wrote {count} events" in result.err

    tracewh("ingest", out, "-w", tmp_path / "fresh", check=True)
    order = "order by event_id"
    before = tw.open(demo).sql(f"select * from events {order}").to_arrow_table()
    after = tw.open(tmp_path / "fresh").sql(f"select * from events {order}").to_arrow_table()
    assert after.num_rows == count and after.equals(before)


def test_export_one_run_to_stdout(demo):
    out = tracewh("export-events", "-", "--run", "demo-gpt-5.4-blind", "-w", demo, check=True).out.splitlines()
    assert json.loads(out[0])["format"] == "tracewh-events/1"
    assert {json.loads(line)["run_id"] for line in out[1:]} == {"demo-gpt-5.4-blind"}


def test_schema_page_is_generated_from_the_code():
    assert (DOCS / "events.md").read_text() == schema_markdown(), "run: tracewh schema > docs/events.md"
    assert tracewh("schema", check=True).out == schema_markdown()


def test_python_api_reads_the_default_warehouse_from_tracewh_home(demo, monkeypatch):
    monkeypatch.setenv("TRACEWH_HOME", str(demo.parent))
    frame = tw.open().sql("select count(*) as n from runs where benchmark = 'agentdemo'").pl()
    assert frame["n"].item() == 6


def test_help_explains_every_command():
    out = tracewh("--help", check=True).out
    for command in ("ingest", "sql", "views", "log", "demo", "export-events", "schema"):
        assert command in out
    assert "--as-of" in tracewh("sql", "--help", check=True).out
    assert "--attr" in tracewh("ingest", "--help", check=True).out


@pytest.mark.parametrize("args, says", [
    (["sql", "--nope", "select 1"], "No such option: --nope (see `"),  # `tracewh sql --help`, as it was run
    (["sql"], "Missing argument 'query'. (see `"),
    (["ingets"], "No such command 'ingets'."),
    (["sql", "-- a comment first\nselect 1"], "a value that starts with '-' goes after `--`"),
])
def test_usage_errors_are_one_line_that_says_what_to_do(args, says):
    result = tracewh(*args)
    assert result.code == 2 and result.err.count("\n") == 1 and says in result.err, result.err


def test_a_query_that_starts_with_a_comment_runs_after_double_dash(demo):
    result = tracewh("sql", "-w", demo, "-f", "csv", "--", "-- runs of the demo agent\nselect count(*) as n from runs "
                     "where benchmark = 'agentdemo'")
    assert result.out == "n\n6\n" and result.code == 0
    bare = tracewh()  # `tracewh` alone: the help, as a usage error
    assert bare.code == 2 and "Commands" in bare.out + bare.err
