"""The command line as a user meets it: demo, sql formats, views, schema, export round trip, errors."""

from __future__ import annotations

import gc
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from helpers import llm_call, plain, tracewh, write_native

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


def test_a_long_output_path_is_reported_whole_on_one_line(demo, tmp_path):
    """stderr is not a terminal here (80 columns to rich): the path still pastes as one line."""
    out = tmp_path / ("a folder with a long name, " * 4).strip(", ") / "runs by model.csv"
    out.parent.mkdir()
    result = tracewh("export", "runs", "--format", "csv", "--out", out, "-w", demo, check=True)
    assert result.err == f"wrote {out}\n" and len(result.err) > 80 and out.stat().st_size > 0


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


# -- what a new user meets (issue #32) ---------------------------------------------------------

def test_reading_a_mistyped_store_is_an_error_naming_it_and_the_store_meant(demo):
    typo = demo.parent / "warehous"
    result = tracewh("sql", "-w", typo, "select count(*) from events")
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert f"no tracewh store at {typo}" in result.err and f"did you mean {demo}?" in result.err
    for command in (["log"], ["views"], ["quarantine"], ["check"], ["export", "runs"], ["stats", "delta"]):
        refused = tracewh(*command, "-w", typo)
        assert refused.code == 2 and "no tracewh store at" in refused.err, (command, refused.err)
    above = tracewh("sql", "-w", demo.parent, "select 1")  # the demo folder, not its store
    assert above.code == 2 and f"did you mean {demo}?" in above.err
    assert not typo.exists()  # reading creates nothing


def test_the_default_store_missing_points_at_the_demo_store(demo, tmp_path):
    home = demo.parent.parent
    result = tracewh("sql", "select 1", env=os.environ | {"TRACEWH_HOME": str(home)})
    assert result.code == 2 and f"no tracewh store at {home / 'warehouse'}" in result.err
    assert f"did you mean {demo}?" in result.err


def test_python_open_is_lazy_its_first_read_of_a_missing_store_raises(tmp_path):
    from tracewh.errors import NotFoundError

    wh = tw.open(tmp_path / "nowhere")  # opening never fails: open(path).ingest(...) creates a store
    assert not wh.exists() and wh.version is None
    for read in (lambda: wh.sql("select 1"), lambda: wh.query("select 1"), wh.log, wh.views,
                 lambda: wh.export("runs")):
        with pytest.raises(NotFoundError, match="no tracewh store at .*nowhere"):
            read()
    assert not (tmp_path / "nowhere").exists()
    wh.ingest([write_native(tmp_path / "run.jsonl", [llm_call("r", 0)])])
    assert wh.exists() and wh.sql("select count(*) from events").fetchall() == [(1,)]


def test_serve_refuses_a_missing_store_unless_it_may_ingest_into_it(tmp_path):
    refused = tracewh("serve", "-w", tmp_path / "typo", "--port", "1", env=os.environ | {"TRACEWH_SERVICE_TOKEN": ""})
    assert refused.code == 2 and f"no tracewh store at {tmp_path / 'typo'}" in refused.err
    assert not (tmp_path / "typo").exists()


def test_query_result_reads_like_a_duckdb_relation(demo):
    """wh.query() answers as wh.sql() does: .arrow(), .pl(), .df(), .fetchall(), whichever way it was fetched."""
    wh = tw.open(demo)
    query = "select run_id, n_llm_calls from runs where benchmark = 'agentdemo' order by run_id"
    relation = wh.sql(query)
    for result in (wh.query(query), wh.query(query, arrow=False)):
        assert result.fetchall() == relation.fetchall() and len(result) == 6
        assert result.arrow().equals(relation.arrow().read_all())
        assert result.pl().equals(relation.pl()) and result.df().equals(relation.df())
        assert result.columns == ["run_id", "n_llm_calls"] and result.truncated is False
        assert result.table.equals(result.arrow()) and result.tuples() == result.fetchall()  # the older names
    capped = wh.query(query, limit=2, arrow=False)
    assert len(capped) == 2 and capped.truncated and capped.arrow().num_rows == 2
    empty = wh.query("select run_id from runs where false", arrow=False)
    assert empty.arrow().column_names == ["run_id"] and empty.pl().columns == ["run_id"]


def test_floats_read_rounded_in_tables_and_exact_in_csv_and_json(demo):
    query = "select 19.591431000000007::double as usd, 1.2e-7::double as tiny, 0.5::double as half"
    assert "| 19.5914 | 1.2e-07 | 0.5 |" in tracewh("sql", "-w", demo, query, "-f", "markdown", check=True).out
    assert "│ 19.59 │" in tracewh("sql", "-w", demo, query, "--decimals", "2", check=True).out
    assert tracewh("sql", "-w", demo, query, "-f", "csv", check=True).out == "usd,tiny,half\n19.591431000000007,1.2e-07,0.5\n"
    assert json.loads(tracewh("sql", "-w", demo, query, "-f", "json", check=True).out)["usd"] == 19.591431000000007
    stats = tracewh("stats", "delta", "--n-boot", "100", "--decimals", "2", "-f", "markdown", "-w", demo, check=True).out
    deltas = [line.split("|")[6].strip() for line in stats.splitlines()[2:]]
    assert deltas and all(len(d.lstrip("-").partition(".")[2]) <= 2 for d in deltas if d != "null"), deltas


def test_tables_piped_or_redirected_keep_every_character(demo):
    long_text = "agent-" + "x" * 120
    piped = tracewh("sql", "-w", demo, f"select '{long_text}' as name", check=True).out  # stdout is a pipe
    assert long_text in piped and "…" not in piped
    again = tracewh("demo", "--tasks", "12", "-w", demo.parent, check=True).out
    assert "agent-claude-sonnet-4.6-profiles.zip" in again and "…" not in again.split("Runs:")[0]


def test_nothing_held_says_so(demo):
    result = tracewh("quarantine", "-w", demo, check=True)
    assert result.out == "" and "nothing held" in result.err


def test_log_shows_optimize_commits(tmp_path):
    wh = tmp_path / "wh"
    for i in range(2):
        tracewh("ingest", write_native(tmp_path / f"b{i}.jsonl", [llm_call(f"r{i}", 0)]), "-w", wh, check=True)
    tracewh("optimize", "-w", wh, check=True)
    rows = pl.read_csv(tracewh("log", "-w", wh, "-f", "csv", check=True).out.encode())
    assert rows["version"].to_list() == [1, 2, 3] and rows["operation"].to_list() == ["ingest", "ingest", "optimize"]
    assert rows["source"][2] == "2 data files compacted into 1" and rows["events"][2] == 0
    assert [b.version for b in tw.open(wh).log()] == [1, 2]  # wh.log(): the batches, as before


def test_counts_in_messages_agree_with_their_nouns(tmp_path):
    one = tracewh("ingest", write_native(tmp_path / "a.jsonl", [llm_call("r", 0)]), "-w", tmp_path / "wh", check=True)
    assert "1 batch: 1 event added, 0 duplicate events, 0 batches already ingested" in plain(one.out)
    sent = tracewh("export-otlp", tmp_path / "out.jsonl", "-w", tmp_path / "wh", check=True)
    assert "1 span of 1 run in 1 request to" in sent.err, sent.err


def test_demo_help_names_where_the_demo_goes():
    out = plain(tracewh("demo", "--help", check=True).out)
    assert "Default: $TRACEWH_HOME/demo (store $TRACEWH_HOME/demo/warehouse)" in out


def test_a_small_native_ingest_imports_only_what_it_uses(tmp_path):
    """The fixed cost of a small ingest is mostly imports (issue #34). Not imported: the bulk
    conversion and pyarrow.compute (a small chunk converts one event at a time, a small native
    file is read line by line), the other formats' mappings and readers (Inspect's zstd zips,
    τ-bench's streamed JSON arrays), the progress bar where stderr is not a terminal,
    great-expectations (the gate runs compiled to SQL), the process pool, pandas and the OTLP
    protobufs. -X importtime lists every module the process imported."""
    source = write_native(tmp_path / "run.jsonl", [llm_call("r", i) for i in range(31)])
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "tracewh", "ingest", str(source), "-w",
                          str(tmp_path / "wh")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert {"duckdb", "deltalake", "tracewh.ingest.quality.compiled"} <= imported  # the gate and the commit ran
    mappings = tuple(f"tracewh.ingest.adapters.{name}.events" for name in ("bfcl", "decisionbench", "delegate52",
                                                                            "entcollabbench", "inspect", "release",
                                                                            "taubench"))
    unused = ("pyarrow.compute", "tracewh.ingest.bulk", "tracewh.ingest.adapters.native.columns", *mappings,
              "backports.zstd", "ijson", "rich.progress", "great_expectations", "multiprocessing", "pandas.core",
              "google.protobuf")
    assert sorted(m for m in imported if m.startswith(unused)) == []
    assert tw.open(tmp_path / "wh").sql("select count(*) from events").fetchall() == [(31,)]


def test_a_command_leaves_the_cycle_collector_as_it_found_it(run, tmp_path):
    """An ingest pauses the collector while it imports and freezes what the imports made
    (cli/collector.py); in a process that goes on after the command, all of it is back."""
    assert gc.isenabled() and gc.get_freeze_count() == 0
    run("ingest", write_native(tmp_path / "run.jsonl", [llm_call("r", 0)]), "-w", tmp_path / "wh", check=True)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        run("ingest", write_native(tmp_path / "more.jsonl", [llm_call("r", 1)]), "-w", tmp_path / "wh", check=True)
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_the_ingest_progress_bar_is_drawn_on_a_terminal_only():
    from rich.console import Console

    from tracewh.cli.ingest_progress import RichListener
    from tracewh.ingest.pipeline import SourceReport
    from tracewh.ingest.sources import memory_source
    from tracewh.warehouse.store import CommitResult

    source = memory_source("native", "run.jsonl", b"{}\n")
    report = SourceReport("run.jsonl", "digest", ["native"], 1, CommitResult(1, 1, 0), [], ["a flag"])
    for terminal in (False, True):
        out = io.StringIO()
        with RichListener(Console(file=out, force_terminal=terminal, color_system=None, width=80)) as listener:
            assert (listener.progress is not None) == terminal
            listener.start_source(source)
            listener.advance(3)
            listener.end_source(report)
        assert "run.jsonl: a flag" in plain(out.getvalue())
