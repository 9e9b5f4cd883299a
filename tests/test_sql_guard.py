"""The SQL layer: only read-only statements run; other dialects transpile; views print for other engines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import llm_call, store_version, tracewh, write_native

from tracewh.queries.guard import QueryError, prepare_query
from tracewh.queries.registry import load_views


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sql")
    events = [llm_call("r1", i, model="gpt-5.4" if i % 2 else "claude-opus-4.6", prompt_tokens=100 * i, cost_usd=0.01 * i)
              for i in range(1, 7)]
    tracewh("ingest", write_native(tmp / "run.jsonl", events), "-w", tmp / "wh", check=True)
    return tmp / "wh"


REFUSED = {
    "create table t as select 1": "CREATE", "drop view events": "DROP", "insert into t values (1)": "INSERT",
    "update events set model = 'x'": "UPDATE", "delete from events": "DELETE", "copy events to '/tmp/out.csv'": "COPY",
    "attach 'other.db' as o": "ATTACH", "install httpfs": "INSTALL", "load httpfs": "LOAD", "set threads = 1": "SET",
    "pragma version": "PRAGMA", "call pragma_version()": "CALL", "alter view events rename to e": "ALTER",
    "select 1; delete from events": "DELETE", "explain delete from events": "DELETE",
}


@pytest.mark.parametrize("statement", REFUSED)
def test_statements_that_write_or_configure_are_refused(wh, statement):
    before = store_version(wh)
    result = tracewh("sql", statement, "-w", wh)
    message = " ".join(result.err.split())
    assert result.code == 2 and f"{REFUSED[statement]} refused" in message and "read-only" in message
    assert store_version(wh) == before


def test_export_database_is_refused(wh):
    result = tracewh("sql", "export database '/tmp/dump'", "-w", wh)
    assert result.code == 2 and "EXPORT refused" in result.err


@pytest.mark.parametrize("query", ["select count(*) from events", "with t as (select 1 as x) select * from t",
                                   "values (1, 'a')", "describe llm_calls", "show tables", "summarize runs",
                                   "explain select * from llm_calls", "pivot llm_calls on model in ('gpt-5.4') using count(*)",
                                   "select 1 union all select 2"])
def test_read_only_statements_run(wh, query):
    assert tracewh("sql", query, "-w", wh, "-f", "csv").code == 0


# What the service's mode refuses besides REFUSED (POST /sql and the MCP sql tool, tests/test_mcp.py).
SERVICE_REFUSED = [
    ("select * from read_csv('/etc/passwd')", "read_csv() refused"),
    ("select * from '/etc/passwd'", "reading '/etc/passwd' refused"),
    ("select * from read_parquet('/tmp/*.parquet')", "read_parquet() refused"),
    ("select * from glob('/etc/*')", "glob() refused"),
    ("select * from read_text('/etc/hostname')", "read_text() refused"),
    ("select * from 'https://example.com/x.csv'", "reading 'https://example.com/x.csv' refused"),
]


@pytest.mark.parametrize("query, message", SERVICE_REFUSED)
def test_the_service_mode_also_refuses_files_and_network(query, message):
    with pytest.raises(QueryError, match=re.escape(message)):
        prepare_query(query, service=True)


SAME_QUERY = {
    "postgres": "SELECT model, COUNT(*)::INT AS n, SUM(cost_usd) AS usd FROM llm_calls WHERE model ILIKE 'gpt%' GROUP BY model",
    "mysql": "SELECT `model`, COUNT(*) AS n, SUM(cost_usd) AS usd FROM llm_calls WHERE model LIKE 'gpt%' GROUP BY `model`",
    "sqlite": "SELECT model, COUNT(*) AS n, SUM(cost_usd) AS usd FROM llm_calls WHERE model LIKE 'gpt%' GROUP BY model",
    "spark": "SELECT model, COUNT(*) AS n, SUM(cost_usd) AS usd FROM llm_calls WHERE model LIKE 'gpt%' GROUP BY model",
    "trino": "SELECT model, COUNT(*) AS n, SUM(cost_usd) AS usd FROM llm_calls WHERE model LIKE 'gpt%' GROUP BY model",
    "bigquery": "SELECT model, COUNT(*) AS n, SUM(cost_usd) AS usd FROM llm_calls WHERE STARTS_WITH(model, 'gpt') GROUP BY model",
    "snowflake": "SELECT model, COUNT(*) AS n, SUM(cost_usd) AS usd FROM llm_calls WHERE model ILIKE 'gpt%' GROUP BY model",
}


@pytest.mark.parametrize("dialect", SAME_QUERY)
def test_other_dialects_give_the_same_answer(wh, dialect):
    out = tracewh("sql", SAME_QUERY[dialect], "--dialect", dialect, "-w", wh, "-f", "csv", check=True).out
    assert out.splitlines()[1].split(",")[:2] == ["gpt-5.4", "3"]
    assert float(out.splitlines()[1].split(",")[2]) == pytest.approx(0.09)


def test_parse_errors_point_at_the_token(wh):
    result = tracewh("sql", "select model frm llm_calls where", "-w", wh)
    assert result.code == 2 and "line 1, column" in result.err and "could not read the query" in result.err


def test_unknown_names_get_suggestions(wh):
    result = tracewh("sql", "select * from llm_call", "-w", wh)
    assert result.code == 2 and "Did you mean llm_calls" in " ".join(result.err.split())


@pytest.mark.parametrize("dialect", ["duckdb", "spark", "trino"])
def test_views_print_for_other_engines_in_dependency_order(wh, dialect):
    out = tracewh("views", "--sql", "--dialect", dialect, "-w", wh, check=True).out
    created = re.findall(r"CREATE OR REPLACE VIEW (\w+)", out, flags=re.I)
    source = ["events_raw"] if dialect in ("duckdb", "spark") else []  # trino needs a catalog tracewh cannot name
    assert created == source + [v.name for v in load_views()]
    if dialect == "duckdb":  # what tracewh prints can be pasted into a DuckDB shell as is
        import duckdb

        con = duckdb.connect()  # a fresh DuckDB session, as a shell would be
        con.execute(out)
        assert con.sql("select count(*), sum(n_llm_calls) from runs").fetchall() == [(1, 6)]
    else:
        assert "GET_JSON_OBJECT" in out if dialect == "spark" else "JSON_EXTRACT_SCALAR" in out


def test_view_script_reads_the_store_where_the_engine_sees_it(wh):
    out = tracewh("views", "--sql", "--dialect", "databricks", "--location", "s3://lab/tracewh/events", check=True).out
    assert "FROM delta.`s3://lab/tracewh/events`;" in out  # not mangled into a local path
    local = tracewh("views", "--sql", "--dialect", "spark", "-w", wh, check=True).out
    assert f"FROM parquet.`{Path(wh).absolute() / 'events'}`;" in local


def test_the_service_remembers_a_checked_query_and_never_a_refusal():
    """The service's clients repeat their queries: a text checked once is not parsed again
    (guard.prepare_query_again), and a refused one is refused every time."""
    from tracewh.queries.guard import MEMO_TEXT_CHARS, prepare_query_again

    checked = prepare_query_again("select count(*) from runs", service=True)
    assert prepare_query_again("select count(*) from runs", service=True) is checked
    assert checked == prepare_query("select count(*) from runs", service=True)
    for _ in range(2):
        with pytest.raises(QueryError, match="refused"):
            prepare_query_again("select * from read_csv('/etc/passwd')", service=True)
    long = "select 1" + " " * MEMO_TEXT_CHARS
    assert prepare_query_again(long, service=True) is not prepare_query_again(long, service=True)


def test_the_guard_checks_queries_from_many_threads_at_once():
    """The service checks each query on a thread of its own: the threads share one parsing
    database (a cursor each), and every check and every refusal is the one a lone thread gets."""
    from concurrent.futures import ThreadPoolExecutor

    def check(i: int) -> str:
        text = f"select {i} as n from events" if i % 2 else "delete from events"
        try:
            return prepare_query(text, service=True).sql
        except QueryError as e:
            return str(e)

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(check, range(200)))
    assert answers == [check(i) for i in range(200)]
    assert "DELETE" in answers[0] and answers[1].lower().startswith("select 1")
